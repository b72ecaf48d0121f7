"""The ingestion pipeline: validate -> parse -> chunk -> embed -> index -> (graph sync).

Each document is ingested by one background job holding the document's lock, so the work
finishes even if the uploading client goes away, and a second upload of the same bytes
waits and then gets the first one's document (``duplicate=True``). Parsing and chunking run
before the first event is emitted, so bad input fails the RPC with its proper status (and
the REST call with its HTTP code); afterwards failures arrive as the stream's error event.

Guarantees:
- nothing is visible to searches until ``ChunkIndex.publish`` commits (one SQLite tx);
- bad input leaves nothing stored (record and original bytes are removed);
- a failure while embedding or indexing removes what was written and marks the document
  FAILED (its bytes are kept, so ``ReindexDocument`` can retry);
- a shutdown or crash mid-way leaves a non-terminal status, resumed by a sweep.

Replicas on one database (``store.leases``, ``ingest.takeover``): the replica ingesting a document
holds its lease and renews it while it works; only the holder writes its status or publishes it.
Every replica sweeps for unfinished documents nobody holds (a shutdown let go of them, or their
replica died and the lease ran out) and resumes them from the stored bytes, one at a time. An upload
of bytes another replica is ingesting waits for that ingestion and reports its outcome.

The stages of one document's ingestion are in ``stages`` (``DocumentIngestion``, which this pipeline extends) and
the rows an upload claims in ``claims``; this module holds the jobs: their locks and leases, the sweeps, and what
an upload reports when another replica has the document.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator

from services.rag.documents import DocumentRecord, DocumentStatus, IngestEvent, IngestOutcome, document_id_for
from services.rag.ingest.claims import check_key, claim_named, claim_new, named_target
from services.rag.ingest.formats import Upload, validate_upload
from services.rag.ingest.jobs import IngestJob
from services.rag.ingest.preparation import PipelineConfig
from services.rag.ingest.stages import MAX_PARSE_ATTEMPTS, DocumentIngestion, deleted_during_ingestion
from services.rag.ingest.takeover import HeldLease
from services.rag.store.leases import LeaseLost
from services.runtime import domain_metrics
from services.runtime.errors import Aborted, DomainError, FailedPrecondition, NotFound, Unavailable

__all__ = ["IngestionPipeline", "PipelineConfig"]

log = logging.getLogger("docuthinker.rag.ingest")


class IngestionPipeline(DocumentIngestion):
    """Ingest, re-index and resume jobs, each a background task that emits its events (see the module doc)."""

    @property
    def busy(self) -> bool:
        """True while any ingest, re-index or resume job runs."""
        return bool(self._tasks)

    # -- entry points ----------------------------------------------------------------
    async def upload(self, tenant: str, filename: str, content_type: str, data: bytes,
                     key: str = "") -> AsyncIterator[IngestEvent]:
        """Ingests new bytes; yields progress then exactly one ``IngestOutcome`` (or raises). With ``key`` (a
        stable name: a client's, or a source's path; or the id of an existing document) the bytes become the
        next version of the document of that name, unless they are its live version already (a duplicate)."""
        upload = validate_upload(filename, content_type, data, self._config.max_upload_bytes)
        job = IngestJob()
        if key:
            self._spawn(self._run_named_upload(tenant, upload, check_key(key), job), job)
        else:
            self._spawn(self._run_upload(tenant, upload, job), job)
        async for event in job.events():
            yield event

    async def reindex(self, tenant: str, document_id: str) -> DocumentRecord:
        job = IngestJob()
        self._spawn(self._run_reindex(tenant, document_id, job), job)
        outcome = None
        async for event in job.events():
            if isinstance(event, IngestOutcome):
                outcome = event
        assert outcome is not None
        return outcome.document

    async def resume_unfinished(self, enabled: bool = True) -> int:
        """One sweep: claims unfinished documents nobody holds a live lease on, one at a time, and resumes
        each (or marks it failed when ``enabled`` is off); returns how many it took."""
        seen: set[str] = set()
        while (record := await asyncio.to_thread(self._metadata.claim_unfinished)) is not None:
            if record.document_id in seen:  # left unfinished again by this pass (a failure it could not mark)
                await asyncio.to_thread(self._metadata.release_lease, record.tenant, record.document_id)
                break
            seen.add(record.document_id)
            job = IngestJob()
            self._spawn(self._run_resume(record, job, enabled), job)
            try:
                async for _ in job.events():
                    pass
            except Exception as exc:  # noqa: BLE001 - one document's failure must not strand the others
                log.warning("resumed ingestion failed", extra={"fields": {
                    "document_id": record.document_id, "error": str(exc) or type(exc).__name__}})
        return len(seen)

    async def sweep_forever(self, interval_s: float, enabled: bool = True) -> None:
        """Sweeps at once (documents a crash or a shutdown left), then every ``interval_s`` (documents whose
        replica died since); runs until cancelled."""
        while True:
            try:
                await self.resume_unfinished(enabled)
            except Exception:
                log.exception("ingestion sweep failed")
            await asyncio.sleep(interval_s)

    async def close(self) -> None:
        """Cancels running jobs; their documents keep a non-terminal status, let go for the next sweep."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coro, job: IngestJob) -> IngestJob:
        async def run() -> None:
            try:
                await coro
            except asyncio.CancelledError:
                job.fail(Unavailable("ingestion was interrupted by a shutdown; another replica or the next start "
                                     "resumes it", reason="INGEST_INTERRUPTED"))
                raise
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                job.fail(exc)
            finally:
                job.finish()

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        job.task = task
        return job

    # -- jobs ------------------------------------------------------------------------
    async def _run_upload(self, tenant: str, upload: Upload, job: IngestJob) -> None:
        sha = hashlib.sha256(upload.data).hexdigest()
        document_id = document_id_for(tenant, sha)
        async with self.locks.hold(document_id):
            while (claimed := await asyncio.to_thread(claim_new, self._metadata, tenant, document_id, sha, upload,
                                                       self._initial_graph_state())) is None:
                # Another replica is ingesting the same bytes: wait until it is done (or its lease runs out).
                await asyncio.sleep(self._config.poll_s)
            record, duplicate = claimed
            if duplicate:
                domain_metrics.DOCUMENTS_INGESTED.labels("duplicate", record.file_type).inc()
                job.emit(IngestOutcome(record, duplicate=True))
                return
            try:
                async with HeldLease(self._metadata, tenant, document_id, self._config.heartbeat_s) as lease:
                    await asyncio.to_thread(self._blobs.put, tenant, sha, upload.data)
                    await self._ingest(record, upload.data, job, lease, forget_on_bad_input=True)
            except LeaseLost:
                # Another replica took the document over (this one stalled past its lease): its outcome is ours.
                # Or the document was deleted through another replica: _follow says so.
                job.emit(IngestOutcome(await self._follow(record)))


    async def _run_named_upload(self, tenant: str, upload: Upload, key: str, job: IngestJob) -> None:
        """Bytes for a named document: its first version, a new version staged beside the live one (which stays
        searchable until the new one is indexed), or a duplicate of its live version."""
        sha = hashlib.sha256(upload.data).hexdigest()
        target = await asyncio.to_thread(named_target, self._metadata, tenant, key)
        while True:
            async with self.locks.hold(target):
                claimed = await asyncio.to_thread(claim_named, self._metadata, tenant, target, key, sha, upload,
                                                self._initial_graph_state())
            if claimed is not None:
                break
            await asyncio.sleep(self._config.poll_s)  # another replica ingests this document or these bytes
        kind, record = claimed
        if kind == "duplicate":
            domain_metrics.DOCUMENTS_INGESTED.labels("duplicate", record.file_type).inc()
            job.emit(IngestOutcome(record, duplicate=True))
            return
        async with self.locks.hold(record.document_id):
            try:
                async with HeldLease(self._metadata, tenant, record.document_id, self._config.heartbeat_s) as lease:
                    await asyncio.to_thread(self._blobs.put, tenant, sha, upload.data)
                    await self._ingest(record, upload.data, job, lease, forget_on_bad_input=True)
            except LeaseLost:
                job.emit(IngestOutcome(await self._follow(record)))

    async def _run_reindex(self, tenant: str, document_id: str, job: IngestJob) -> None:
        async with self.locks.hold(document_id):
            record = await asyncio.to_thread(self._metadata.get_document, tenant, document_id)
            if record is None:
                raise NotFound(f"document {document_id} not found", reason="DOCUMENT_NOT_FOUND",
                               metadata={"document_id": document_id})
            if not await asyncio.to_thread(self._metadata.claim_document, tenant, document_id):
                raise Aborted(f"document {document_id} is being ingested by another replica; try again when it "
                              "is done", reason="INGEST_IN_PROGRESS", metadata={"document_id": document_id})
            try:
                async with HeldLease(self._metadata, tenant, document_id, self._config.heartbeat_s) as lease:
                    data = await asyncio.to_thread(self._blobs.get, tenant, record.content_sha256)
                    if data is None:
                        raise FailedPrecondition(
                            f"the original bytes of document {document_id} are missing; upload it again",
                            reason="ORIGINAL_MISSING", metadata={"document_id": document_id},
                        )
                    await self._ingest(record, data, job, lease, forget_on_bad_input=False)
            except LeaseLost as lost:
                raise await self._lost(record, lost) from lost

    async def _run_resume(self, claimed: DocumentRecord, job: IngestJob, enabled: bool) -> None:
        """Resumes a document the sweep claimed."""
        async with self.locks.hold(claimed.document_id), HeldLease(
                self._metadata, claimed.tenant, claimed.document_id, self._config.heartbeat_s) as lease:
            # Re-read under the lock: an upload of this replica may have finished it meanwhile.
            record = await asyncio.to_thread(self._metadata.get_document, claimed.tenant, claimed.document_id)
            if record is None or record.status in (DocumentStatus.READY, DocumentStatus.FAILED):
                return
            attempts = await asyncio.to_thread(self._metadata.parse_attempts, record.tenant, record.document_id)
            if attempts >= MAX_PARSE_ATTEMPTS:
                log.warning("not resumed: its parse was interrupted before", extra={"fields": {
                    "document_id": record.document_id, "tenant": record.tenant, "parse_attempts": attempts}})
                await self._mark_failed(record, record.error_message or (
                    f"reading this document was interrupted {attempts} times (its parser or the service died while "
                    "parsing it); it is not resumed again"))
                return
            data = await asyncio.to_thread(self._blobs.get, record.tenant, record.content_sha256)
            if data is None or not enabled:
                why = "original bytes missing" if data is None else "resume on startup is disabled"
                log.warning("not resumed: %s", why, extra={"fields": {
                    "document_id": record.document_id, "tenant": record.tenant}})
                await self._mark_failed(record, f"ingestion was interrupted by a restart ({why}); upload it again")
                return
            log.info("resuming interrupted ingestion", extra={"fields": {
                "document_id": record.document_id, "tenant": record.tenant, "status": record.status.name}})
            # Refused now (a limit, a format error): FAILED with the reason, never left for another resume.
            await self._ingest(record, data, job, lease, forget_on_bad_input=False)

    async def _follow(self, record: DocumentRecord) -> DocumentRecord:
        """Waits for the replica that took the document over; its READY record. Raises what happened
        instead when the document was deleted meanwhile or its ingestion failed there."""
        while True:
            current = await asyncio.to_thread(self._metadata.get_document, record.tenant, record.document_id)
            if current is None and record.version_of:  # a staged version: promoted (or deleted) by the other replica
                current = await asyncio.to_thread(self._metadata.get_document, record.tenant, record.version_of)
                if current is not None and current.version >= record.version:
                    return current
                raise deleted_during_ingestion(record.version_of)
            if current is None:
                raise deleted_during_ingestion(record.document_id)
            if current.status is DocumentStatus.FAILED:
                raise Aborted(f"ingestion of document {record.document_id} was taken over by another replica and "
                              f"failed there: {current.error_message}", reason="INGEST_FAILED",
                              metadata={"document_id": record.document_id})
            if current.status is DocumentStatus.READY:
                return current
            await asyncio.sleep(self._config.poll_s)

    async def _lost(self, record: DocumentRecord, lost: LeaseLost) -> DomainError:
        """What to tell the caller of a job whose lease was lost: the document may have been deleted (by a
        request to another replica) rather than taken over."""
        current = await asyncio.to_thread(self._metadata.get_document, record.tenant, record.document_id)
        return deleted_during_ingestion(record.document_id) if current is None else lost
