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
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

import numpy as np

from services.rag.documents import (
    Chunk,
    DocumentRecord,
    DocumentStatus,
    GraphSyncState,
    IngestEvent,
    IngestOutcome,
    IngestProgress,
    IngestStage,
    ParsedDocument,
    document_id_for,
    document_id_for_key,
    staging_id_for,
)
from services.rag.graph_sync.port import GraphSync
from services.rag.ingest.embedding import TextEmbedder, embed_in_groups
from services.rag.ingest.formats import Upload, validate_upload
from services.rag.ingest.jobs import IngestJob, StageTimer
from services.rag.ingest.parser_pool import ParserPool
from services.rag.ingest.preparation import PipelineConfig, chunk_document, parse_document
from services.rag.ingest.progress import OcrEvents
from services.rag.ingest.takeover import HeldLease
from services.rag.locks import KeyedLocks
from services.rag.store.ports import BlobPort, ChunkIndexPort
from services.rag.store.leases import LeaseLost
from services.rag.versions.indexing import promote, reusable_vectors
from services.rag.versions.model import TargetBusy
from services.runtime import domain_metrics
from services.runtime.errors import (
    Aborted,
    DomainError,
    FailedPrecondition,
    FieldViolation,
    InvalidArgument,
    NotFound,
    Unavailable,
)

__all__ = ["IngestionPipeline", "PipelineConfig"]

log = logging.getLogger("docuthinker.rag.ingest")

MAX_PARSE_ATTEMPTS = 2
"""Parses of one document begun and never finished (the service died reading it) before a restart stops
resuming it: the document goes FAILED with the reason instead of crash-looping the service."""


def deleted_during_ingestion(document_id: str) -> Aborted:
    return Aborted(f"document {document_id} was deleted while it was being ingested", reason="DELETED_DURING_INGEST",
                   metadata={"document_id": document_id})


class IngestionPipeline:
    def __init__(
        self,
        index: ChunkIndexPort,
        blobs: BlobPort,
        embedder: TextEmbedder | Callable[[], TextEmbedder],
        graph_sync: GraphSync,
        config: PipelineConfig,
        on_change: Callable[[str], None] = lambda tenant: None,
        locks: KeyedLocks | None = None,
    ) -> None:
        self._index = index
        self._metadata = index.metadata
        self._blobs = blobs
        # A factory defers loading the model until the first document needs it.
        self._embedder_factory: Callable[[], TextEmbedder] = (
            (lambda: embedder) if hasattr(embedder, "encode") else embedder  # type: ignore[assignment,return-value]
        )
        self._graph_sync = graph_sync
        self._config = config
        self._on_change = on_change
        self.on_indexed: Callable[[list[str]], None] = lambda chunk_texts: None
        """Called with a document's chunk texts once they are searchable (the sentence-cache warm-up)."""
        self.locks = locks or KeyedLocks()
        self._tasks: set[asyncio.Task] = set()

    @property
    def embedder(self) -> TextEmbedder:
        return self._embedder_factory()

    @property
    def parsers(self) -> ParserPool | None:
        """The parser worker processes (None: documents are parsed in this process)."""
        return self._config.parsers

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
            except Exception:  # noqa: BLE001 - the next sweep tries again
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
            while (claimed := await asyncio.to_thread(self._claim_new, tenant, document_id, sha, upload)) is None:
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

    def _claim_new(self, tenant: str, document_id: str, sha: str,
                   upload: Upload) -> tuple[DocumentRecord, bool] | None:
        """In a worker thread: (the READY document, True) for bytes already ingested; (the new PENDING record,
        False) once this replica holds the lease on it; None while another replica ingests the same bytes."""
        existing = self._metadata.get_document(tenant, document_id)
        if existing is not None and existing.status is DocumentStatus.READY:
            return existing, True
        now = time.time()
        record = DocumentRecord(
            document_id=document_id, tenant=tenant, filename=upload.filename,
            file_type=upload.file_type.value, content_type=upload.content_type, content_sha256=sha,
            size_bytes=len(upload.data), status=DocumentStatus.PENDING,
            create_time=existing.create_time if existing else now, update_time=now,
            graph_sync=self._initial_graph_state(),
        )
        return (record, False) if self._metadata.upsert_document(record) else None

    async def _run_named_upload(self, tenant: str, upload: Upload, key: str, job: IngestJob) -> None:
        """Bytes for a named document: its first version, a new version staged beside the live one (which stays
        searchable until the new one is indexed), or a duplicate of its live version."""
        sha = hashlib.sha256(upload.data).hexdigest()
        target = await asyncio.to_thread(self._named_target, tenant, key)
        while True:
            async with self.locks.hold(target):
                claimed = await asyncio.to_thread(self._claim_named, tenant, target, key, sha, upload)
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

    def _named_target(self, tenant: str, key: str) -> str:
        """The document a name stands for: an existing document's own id, else the id derived from the name."""
        existing = self._metadata.get_document(tenant, key)
        return key if existing is not None and not existing.version_of else document_id_for_key(tenant, key)

    def _claim_named(self, tenant: str, target: str, key: str, sha: str,
                     upload: Upload) -> tuple[str, DocumentRecord] | None:
        """In a worker thread: ("duplicate", the document) for its live bytes; ("new", the claimed record) for
        a document's first version (or one whose last ingestion failed, taken again in place); ("staged", the
        claimed staging row) for a new version; None while another replica holds what this needs."""
        existing = self._metadata.get_document(tenant, target)
        now = time.time()
        if existing is not None and existing.status is DocumentStatus.READY:
            if existing.content_sha256 == sha:
                return "duplicate", existing
            staging = DocumentRecord(
                document_id=staging_id_for(tenant, target, sha), tenant=tenant, filename=upload.filename,
                file_type=upload.file_type.value, content_type=upload.content_type, content_sha256=sha,
                size_bytes=len(upload.data), status=DocumentStatus.PENDING, create_time=now, update_time=now,
                graph_sync=self._initial_graph_state(), version=0, version_of=target)
            try:
                claimed = self._metadata.claim_version(staging)
            except LookupError:
                return None  # deleted meanwhile: the next look creates it anew
            return None if claimed is None else ("staged", claimed)
        record = DocumentRecord(
            document_id=target, tenant=tenant, filename=upload.filename, file_type=upload.file_type.value,
            content_type=upload.content_type, content_sha256=sha, size_bytes=len(upload.data),
            status=DocumentStatus.PENDING, create_time=existing.create_time if existing else now, update_time=now,
            graph_sync=self._initial_graph_state(), version=existing.version if existing else 1,
            key=existing.key if existing else (key if target != key else ""))
        return ("new", record) if self._metadata.upsert_document(record) else None

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

    # -- stages ----------------------------------------------------------------------
    async def _ingest(self, record: DocumentRecord, data: bytes, job: IngestJob, lease: HeldLease,
                      forget_on_bad_input: bool) -> None:
        timings = StageTimer()
        ocr = OcrEvents(record, job, asyncio.get_running_loop())
        try:
            # Each status is written in the worker thread that runs its stage, before it: one hop per stage.
            parsed = await parse_document(self._config, record, data, ocr, before=lambda: self._begin_parse(record))
            timings.lap("parse_ms")
            chunks = await asyncio.to_thread(self._chunk, record, parsed)
            timings.lap("chunk_ms")
        except LeaseLost:
            raise  # the document is another replica's now: nothing of it is this one's to undo or mark
        except DomainError as exc:
            if not await self._still_held(record):
                raise LeaseLost(record.document_id) from exc
            domain_metrics.DOCUMENTS_INGESTED.labels("rejected", record.file_type).inc()
            log.info("document refused", extra={"fields": {
                "document_id": record.document_id, "tenant": record.tenant, "reason": exc.reason}})
            if forget_on_bad_input:
                # The refusal is written first (the lease kept): a crash before the bytes are forgotten leaves a
                # document that the next resume marks FAILED with this reason instead of parsing it again.
                await asyncio.to_thread(self._metadata.update_claimed, record.tenant, record.document_id,
                                        error_message=exc.message[:2000], parse_attempts=MAX_PARSE_ATTEMPTS)
                await asyncio.to_thread(self._forget, record)
            else:
                await asyncio.to_thread(self._index.discard, record.tenant, record.document_id, [])
                await self._mark_failed(record, exc.message)
            self._on_change(record.tenant)
            raise
        except BaseException as exc:
            if not isinstance(exc, asyncio.CancelledError):
                await self._mark_failed(record, f"internal error while parsing: {type(exc).__name__}")
            raise
        record = replace(record, page_count=parsed.page_count, sheet_names=parsed.sheet_names, title=parsed.title)
        if not ocr.started:
            job.emit(IngestProgress(IngestStage.RECEIVED, record.size_bytes, record.size_bytes, "bytes received"))
        job.emit(IngestProgress(IngestStage.PARSED, len(parsed.sections), len(parsed.sections),
                                f"{len(parsed.sections)} sections, {parsed.char_count} characters"))
        job.emit(IngestProgress(IngestStage.CHUNKED, len(chunks), len(chunks), f"{len(chunks)} chunks"))
        staged: list[str] = []
        texts = [c.text for c in chunks]
        reused = 0
        try:
            embedder = self.embedder
            vectors = np.zeros((len(chunks), embedder.dimension), dtype=np.float32)
            reused = await self._reuse_vectors(record, texts, vectors)
            fresh = [i for i, text in enumerate(texts) if not vectors[i].any()]
            note = f" ({reused} reused from earlier versions)" if reused else ""
            if reused:
                job.emit(IngestProgress(IngestStage.EMBEDDED, reused, len(chunks),
                                        f"embedded {reused} of {len(chunks)}{note}"))
            computed = np.zeros((len(fresh), embedder.dimension), dtype=np.float32)
            async for done in embed_in_groups(embedder, [texts[i] for i in fresh], self._config.embed_progress_every,
                                              computed):
                lease.check()
                job.emit(IngestProgress(IngestStage.EMBEDDED, reused + done, len(chunks),
                                        f"embedded {reused + done} of {len(chunks)}{note}"))
            if fresh:
                vectors[fresh] = computed
            timings.lap("embed_ms")
            staged = [c.chunk_id for c in chunks]
            record = await self._publish(record, parsed, chunks, vectors, reused, lease)
            lease.settle()
            timings.lap("index_ms")
        except (asyncio.CancelledError, LeaseLost):
            raise  # shutdown (the status stays non-terminal, for a sweep), or the document is another replica's
        except BaseException as exc:
            if not await self._still_held(record):
                raise LeaseLost(record.document_id) from exc
            log.exception("ingestion failed", extra={"fields": {"document_id": record.document_id}})
            await asyncio.shield(asyncio.to_thread(self._index.discard, record.tenant, record.document_id, staged))
            self._on_change(record.tenant)
            message = exc.message if isinstance(exc, DomainError) else f"internal error: {type(exc).__name__}"
            domain_metrics.DOCUMENTS_INGESTED.labels("failed", record.file_type).inc()
            await self._mark_failed(record, message)
            raise
        self._on_change(record.tenant)
        self.on_indexed(texts)
        job.emit(IngestProgress(IngestStage.INDEXED, len(chunks), len(chunks), "searchable"))
        await self._sync_graph(record, parsed, job)
        final = await asyncio.to_thread(self._metadata.get_document, record.tenant, record.document_id)
        timings.lap("graph_ms")
        domain_metrics.DOCUMENTS_INGESTED.labels("ready", record.file_type).inc()
        domain_metrics.CHUNKS_EMBEDDED.inc(len(chunks) - reused)
        log.info("document ingested", extra={"fields": {
            "document_id": record.document_id, "tenant": record.tenant, "file_type": record.file_type,
            "size_bytes": record.size_bytes, "sections": len(parsed.sections), "chunks": len(chunks),
            "version": record.version, "chunks_reused": reused, **timings.stages}})
        job.emit(IngestOutcome(final or record, chunks_embedded=len(chunks) - reused, chunks_reused=reused))

    async def _sync_graph(self, record: DocumentRecord, parsed: ParsedDocument, job: IngestJob) -> None:
        if not self._graph_sync.enabled:
            return
        try:
            synced = await self._graph_sync.sync(record, parsed.sections)
        except Exception as exc:  # noqa: BLE001 - the document is ready; the graph can catch up later
            log.warning("graph sync failed", exc_info=exc, extra={"fields": {"document_id": record.document_id}})
            synced = False
        if synced:
            await asyncio.to_thread(self._metadata.update_document, record.document_id,
                                    graph_sync=GraphSyncState.SYNCED)
            job.emit(IngestProgress(IngestStage.GRAPH_SYNCED, 1, 1, "knowledge graph updated"))

    def _initial_graph_state(self) -> GraphSyncState:
        return GraphSyncState.PENDING if self._graph_sync.enabled else GraphSyncState.DISABLED

    def _begin_parse(self, record: DocumentRecord) -> None:
        """In a worker thread: PARSING, one more parse attempt counted (``_run_resume`` reads it), or ``LeaseLost``."""
        if self._metadata.begin_parse(record.tenant, record.document_id) is None:
            raise LeaseLost(record.document_id)

    def _claim_status(self, record: DocumentRecord, status: DocumentStatus) -> None:
        """In a worker thread: writes the stage's status, or raises ``LeaseLost``."""
        if not self._metadata.update_claimed(record.tenant, record.document_id, status=status):
            raise LeaseLost(record.document_id)

    def _chunk(self, record: DocumentRecord, parsed: ParsedDocument) -> list[Chunk]:
        """In a worker thread: CHUNKING, the chunks, then EMBEDDING (the next stage starts with them)."""
        if not self._metadata.update_claimed(record.tenant, record.document_id, status=DocumentStatus.CHUNKING,
                                             parse_attempts=0):
            raise LeaseLost(record.document_id)
        chunks = chunk_document(self._config, record, parsed, self._metadata.count_chunks)
        self._claim_status(record, DocumentStatus.EMBEDDING)
        return chunks

    async def _reuse_vectors(self, record: DocumentRecord, texts: list[str], vectors: np.ndarray) -> int:
        """Fills the rows of ``vectors`` whose text a chunk of an earlier version had; returns how many."""
        if not record.version_of:
            return 0
        known = await asyncio.to_thread(reusable_vectors, self._index, record.tenant, record.version_of, texts)
        reused = 0
        for i, text in enumerate(texts):
            vector = known.get(text)
            if vector is not None and vector.shape == vectors[i].shape and vector.any():
                vectors[i] = vector
                reused += 1
        domain_metrics.CHUNKS_REUSED.inc(reused)
        return reused

    async def _publish(self, record: DocumentRecord, parsed: ParsedDocument, chunks: list[Chunk],
                       vectors: np.ndarray, reused: int, lease: HeldLease) -> DocumentRecord:
        """INDEXING, the vectors staged (invisible), then the publication (READY); a staged version is promoted
        instead, once nothing else holds its document. Returns the published document."""
        await asyncio.to_thread(self._index_chunks, record, chunks, vectors)
        if not record.version_of:
            await asyncio.to_thread(self._index.publish, record, parsed.sections, chunks,
                                    self._initial_graph_state())
            return record
        while True:
            lease.check()
            try:
                async with self.locks.hold(record.version_of):
                    return await asyncio.to_thread(promote, self._index, record, parsed.sections, chunks, vectors,
                                                   self._initial_graph_state(), reused)
            except TargetBusy:
                await asyncio.sleep(self._config.poll_s)  # the document is being re-indexed: wait for it
            except LookupError as gone:
                raise deleted_during_ingestion(record.version_of) from gone

    def _index_chunks(self, record: DocumentRecord, chunks: list[Chunk], vectors: np.ndarray) -> None:
        """In a worker thread: INDEXING, then the vectors staged (invisible until the publication)."""
        self._claim_status(record, DocumentStatus.INDEXING)
        self._index.stage_vectors(record.tenant, record.target_id, chunks, vectors)

    async def _still_held(self, record: DocumentRecord) -> bool:
        """Whether this replica still holds the lease, before it undoes a failed attempt's writes (which are
        the new holder's too when it does not: the same chunk ids)."""
        return await asyncio.shield(asyncio.to_thread(self._metadata.renew_lease, record.tenant, record.document_id))

    async def _mark_failed(self, record: DocumentRecord, message: str) -> None:
        marked = await asyncio.shield(asyncio.to_thread(
            self._metadata.update_claimed, record.tenant, record.document_id, status=DocumentStatus.FAILED,
            error_message=message[:2000]))
        if not marked:
            log.warning("failure not recorded: another replica holds the document", extra={"fields": {
                "document_id": record.document_id}})

    def _forget(self, record: DocumentRecord) -> None:
        """Bad input: remove every trace (record, chunks, vectors, original bytes, unless another document or
        version has the same bytes)."""
        self._index.remove_document(record.tenant, record.document_id)
        if not self._metadata.content_in_use(record.tenant, record.content_sha256):
            self._blobs.delete(record.tenant, record.content_sha256)


MAX_KEY_CHARS = 1024


def check_key(key: str) -> str:
    """A document name: at most ``MAX_KEY_CHARS`` characters, no control characters (INVALID_ARGUMENT)."""
    if len(key) > MAX_KEY_CHARS or any(ord(ch) < 32 or ord(ch) == 127 for ch in key) or not key.strip():
        raise InvalidArgument(f"document_key must be 1 to {MAX_KEY_CHARS} printable characters",
                              reason="INVALID_DOCUMENT_KEY",
                              violations=[FieldViolation("document_key", "printable, at most 1024 characters")])
    return key
