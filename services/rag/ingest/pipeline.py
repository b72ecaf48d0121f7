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
- a shutdown or crash mid-way leaves a non-terminal status, resumed at the next start.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace

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
    Provenance,
    chunk_id_for,
    document_id_for,
)
from services.rag.graph_sync.port import GraphSync
from services.rag.ingest.chunking import ChunkerConfig, chunk_sections
from services.rag.ingest.embedding import TextEmbedder, embed_in_groups
from services.rag.ingest.formats import FileType, Upload, corrupt, validate_upload
from services.rag.ingest.jobs import IngestJob, StageTimer
from services.rag.ingest.ocr import OcrProgress, PageReader
from services.rag.ingest.parsers import AudioReader, ParseLimits, parse
from services.rag.ingest.parsers.limits import too_large
from services.rag.ingest.timecodes import time_range, touched
from services.rag.locks import KeyedLocks
from services.rag.store import BlobStore, ChunkIndex
from services.runtime import domain_metrics
from services.runtime.errors import DomainError, FailedPrecondition, NotFound, ResourceExhausted, Unavailable
from services.speech.transcriber import Lane

log = logging.getLogger("docuthinker.rag.ingest")


@dataclass(frozen=True)
class PipelineConfig:
    max_upload_bytes: int = 25 * 1024 * 1024
    chunker: ChunkerConfig = field(default_factory=ChunkerConfig)
    limits: ParseLimits = field(default_factory=ParseLimits)
    ocr: PageReader | None = None
    """Reads scanned PDF pages and page images; None: such documents are refused."""
    audio: AudioReader | None = None
    """Transcribes audio and video documents; None: they are refused."""
    embed_batch_size: int = 32
    embed_progress_every: int = 128
    max_tenant_chunks: int = 0
    """Chunks one tenant may hold over all its documents (0: no quota)."""


class IngestionPipeline:
    def __init__(
        self,
        index: ChunkIndex,
        blobs: BlobStore,
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
    def busy(self) -> bool:
        """True while any ingest, re-index or resume job runs."""
        return bool(self._tasks)

    # -- entry points ----------------------------------------------------------------
    async def upload(self, tenant: str, filename: str, content_type: str, data: bytes) -> AsyncIterator[IngestEvent]:
        """Ingests new bytes; yields progress then exactly one ``IngestOutcome`` (or raises)."""
        upload = validate_upload(filename, content_type, data, self._config.max_upload_bytes)
        job = IngestJob()
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
        """Restarts documents left in a non-terminal status by a crash (or marks them failed)."""
        stuck = await asyncio.to_thread(self._metadata.unfinished_documents)
        for record in stuck:
            job = IngestJob()
            self._spawn(self._run_resume(record, job, enabled), job)
            try:
                async for _ in job.events():
                    pass
            except Exception as exc:  # noqa: BLE001 - one document's failure must not strand the others
                log.warning("resumed ingestion failed", extra={"fields": {
                    "document_id": record.document_id, "error": str(exc) or type(exc).__name__}})
        return len(stuck)

    async def close(self) -> None:
        """Cancels running jobs; their documents keep a non-terminal status and resume at next start."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coro, job: IngestJob) -> IngestJob:
        async def run() -> None:
            try:
                await coro
            except asyncio.CancelledError:
                job.fail(Unavailable("ingestion was interrupted by a shutdown; it resumes on restart",
                                     reason="INGEST_INTERRUPTED"))
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
            existing = await asyncio.to_thread(self._metadata.get_document, tenant, document_id)
            if existing is not None and existing.status is DocumentStatus.READY:
                domain_metrics.DOCUMENTS_INGESTED.labels("duplicate", existing.file_type).inc()
                job.emit(IngestOutcome(existing, duplicate=True))
                return
            now = time.time()
            record = DocumentRecord(
                document_id=document_id, tenant=tenant, filename=upload.filename,
                file_type=upload.file_type.value, content_type=upload.content_type, content_sha256=sha,
                size_bytes=len(upload.data), status=DocumentStatus.PENDING,
                create_time=existing.create_time if existing else now, update_time=now,
                graph_sync=self._initial_graph_state(),
            )
            await asyncio.to_thread(self._metadata.upsert_document, record)
            await asyncio.to_thread(self._blobs.put, tenant, sha, upload.data)
            await self._ingest(record, upload.data, job, forget_on_bad_input=True)

    async def _run_reindex(self, tenant: str, document_id: str, job: IngestJob) -> None:
        async with self.locks.hold(document_id):
            record = await asyncio.to_thread(self._metadata.get_document, tenant, document_id)
            if record is None:
                raise NotFound(f"document {document_id} not found", reason="DOCUMENT_NOT_FOUND",
                               metadata={"document_id": document_id})
            data = await asyncio.to_thread(self._blobs.get, tenant, record.content_sha256)
            if data is None:
                raise FailedPrecondition(
                    f"the original bytes of document {document_id} are missing; upload it again",
                    reason="ORIGINAL_MISSING", metadata={"document_id": document_id},
                )
            await self._ingest(record, data, job, forget_on_bad_input=False)

    async def _run_resume(self, record: DocumentRecord, job: IngestJob, enabled: bool) -> None:
        async with self.locks.hold(record.document_id):
            data = await asyncio.to_thread(self._blobs.get, record.tenant, record.content_sha256)
            if data is None or not enabled:
                why = "original bytes missing" if data is None else "resume on startup is disabled"
                await self._mark_failed(record, f"ingestion was interrupted by a restart ({why}); upload it again")
                return
            log.info("resuming interrupted ingestion", extra={"fields": {
                "document_id": record.document_id, "tenant": record.tenant, "status": record.status.name}})
            await self._ingest(record, data, job, forget_on_bad_input=True)

    # -- stages ----------------------------------------------------------------------
    async def _ingest(self, record: DocumentRecord, data: bytes, job: IngestJob, forget_on_bad_input: bool) -> None:
        timings = StageTimer()
        ocr = _OcrEvents(record, job, asyncio.get_running_loop())
        try:
            await self._set_status(record, DocumentStatus.PARSING)
            parsed = await self._run_parse(record, data, ocr)
            timings.lap("parse_ms")
            await self._set_status(record, DocumentStatus.CHUNKING)
            chunks = await asyncio.to_thread(self._chunk, record, parsed)
            timings.lap("chunk_ms")
        except DomainError as exc:
            domain_metrics.DOCUMENTS_INGESTED.labels("rejected", record.file_type).inc()
            if forget_on_bad_input:
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
        try:
            await self._set_status(record, DocumentStatus.EMBEDDING)
            embedder = self.embedder
            vectors = np.zeros((len(chunks), embedder.dimension), dtype=np.float32)
            texts = [c.text for c in chunks]
            async for done in embed_in_groups(embedder, texts, self._config.embed_batch_size,
                                              self._config.embed_progress_every, vectors):
                job.emit(IngestProgress(IngestStage.EMBEDDED, done, len(chunks), f"embedded {done} of {len(chunks)}"))
            timings.lap("embed_ms")
            await self._set_status(record, DocumentStatus.INDEXING)
            staged = [c.chunk_id for c in chunks]
            await asyncio.to_thread(self._index.stage_vectors, record.tenant, record.document_id, chunks, vectors)
            await asyncio.to_thread(self._index.publish, record, parsed.sections, chunks, self._initial_graph_state())
            timings.lap("index_ms")
        except asyncio.CancelledError:
            raise  # shutdown: the status stays non-terminal and the document resumes on restart
        except BaseException as exc:
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
        domain_metrics.CHUNKS_EMBEDDED.inc(len(chunks))
        log.info("document ingested", extra={"fields": {
            "document_id": record.document_id, "tenant": record.tenant, "file_type": record.file_type,
            "size_bytes": record.size_bytes, "sections": len(parsed.sections), "chunks": len(chunks),
            **timings.stages}})
        job.emit(IngestOutcome(final or record))

    async def _run_parse(self, record: DocumentRecord, data: bytes, ocr: _OcrEvents) -> ParsedDocument:
        """In a worker thread: a recording's on the speech pool, so queued ones hold none of the loop's threads."""
        audio = self._config.audio
        if audio is None or record.file_type != FileType.AUDIO.value:
            return await asyncio.to_thread(self._parse, record, data, ocr.on_page, ocr.on_seconds)
        call = functools.partial(contextvars.copy_context().run, self._parse, record, data, ocr.on_page, ocr.on_seconds)
        return await asyncio.get_running_loop().run_in_executor(audio.transcriber.executor(Lane.DOCUMENT), call)

    def _parse(self, record: DocumentRecord, data: bytes, on_ocr_page: OcrProgress,
               on_audio: Callable[[float, float, str], None] | None = None) -> ParsedDocument:
        file_type = FileType(record.file_type)
        try:
            return parse(data, file_type, self._config.limits, self._config.ocr, on_ocr_page,
                         self._config.audio, on_audio)
        except DomainError:
            raise
        except RecursionError as exc:
            raise corrupt(file_type, "it is nested too deeply") from exc
        except Exception as exc:  # noqa: BLE001 - a parser library choking on malformed input
            log.warning("parser failed", exc_info=exc, extra={"fields": {"document_id": record.document_id}})
            raise corrupt(file_type, f"the {file_type.value} parser could not read it ({type(exc).__name__})") from exc

    def _chunk(self, record: DocumentRecord, parsed: ParsedDocument) -> list[Chunk]:
        spans = chunk_sections(parsed.sections, self._config.chunker)
        self._check_chunk_caps(record, len(spans))
        chunks = []
        for ordinal, span in enumerate(spans):
            section = parsed.sections[span.section_index]
            start_s, end_s = time_range(section.time_starts, span.start, span.end)
            chunks.append(Chunk(
                chunk_id=chunk_id_for(record.tenant, record.content_sha256, ordinal),
                tenant=record.tenant,
                ordinal=ordinal,
                text=section.text[span.start:span.end],
                provenance=Provenance(
                    document_id=record.document_id, filename=record.filename, page=section.page,
                    sheet_name=section.sheet_name, row_start=span.row_start, row_end=span.row_end,
                    heading_path=section.heading_path, char_start=span.start, char_end=span.end,
                    section_index=span.section_index, start_seconds=start_s, end_seconds=end_s,
                    time_starts=touched(section.time_starts, span.start, span.end),
                ),
            ))
        return chunks

    def _check_chunk_caps(self, record: DocumentRecord, count: int) -> None:
        """Chunks per document (a property of the file: 400) and per tenant (a quota: 429, which limit in the reason).

        The tenant's count is of its READY documents; documents ingesting at the same time are not counted
        against each other, so a burst of uploads may pass the quota by at most their own chunks."""
        limit = self._config.limits.max_chunks
        if count > limit:
            raise too_large(f"chunks ({count} at DOCUTHINKER_RAG_CHUNK_SIZE)", limit, "TOO_MANY_CHUNKS")
        quota = self._config.max_tenant_chunks
        if quota:
            stored = self._metadata.count_chunks(record.tenant)
            if stored + count > quota:
                raise ResourceExhausted(
                    f"tenant {record.tenant!r} holds {stored} chunks; this document's {count} would pass its quota "
                    f"of {quota}: delete documents or raise DOCUTHINKER_RAG_MAX_TENANT_CHUNKS",
                    reason="TENANT_CHUNK_QUOTA",
                    metadata={"limit": str(quota), "stored": str(stored), "chunks": str(count),
                              "setting": "DOCUTHINKER_RAG_MAX_TENANT_CHUNKS"},
                )

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

    async def _set_status(self, record: DocumentRecord, status: DocumentStatus) -> None:
        await asyncio.to_thread(self._metadata.update_document, record.document_id, status=status)

    async def _mark_failed(self, record: DocumentRecord, message: str) -> None:
        await asyncio.shield(asyncio.to_thread(
            self._metadata.update_document, record.document_id, status=DocumentStatus.FAILED,
            error_message=message[:2000]))

    def _forget(self, record: DocumentRecord) -> None:
        """Bad input: remove every trace (record, chunks, vectors, original bytes)."""
        self._index.remove_document(record.tenant, record.document_id)
        self._blobs.delete(record.tenant, record.content_sha256)


class _OcrEvents:
    """OCR and transcription progress from the parser's worker thread, as events of the upload's stream.

    Events normally start only once a document has parsed, so that bad input still fails the call
    with its own status (HTTP 4xx over REST). A scan is past every check but OCR itself when OCR
    starts, and may take minutes: its stream starts then (RECEIVED), and reports every page.
    """

    def __init__(self, record: DocumentRecord, job: IngestJob, loop: asyncio.AbstractEventLoop) -> None:
        self._record, self._job, self._loop = record, job, loop
        self.started = False

    def on_page(self, done: int, total: int) -> None:
        # Runs in the parser's thread; the job's queue belongs to the loop. Callbacks run in the order
        # they were scheduled, so all of them have run when the parse's result reaches the loop.
        self._loop.call_soon_threadsafe(self._emit, done, total)

    def _emit(self, done: int, total: int) -> None:
        if not self.started:
            self.started = True
            size = self._record.size_bytes
            self._job.emit(IngestProgress(IngestStage.RECEIVED, size, size, "bytes received"))
        self._job.emit(IngestProgress(IngestStage.OCR, done, total, f"OCR: {done} of {total} pages read"))

    def on_seconds(self, done: float, total: float, language: str) -> None:
        """Transcription progress of a recording (same thread rules as ``on_page``)."""
        self._loop.call_soon_threadsafe(self._emit_seconds, done, total, language)

    def _emit_seconds(self, done: float, total: float, language: str) -> None:
        if not self.started:
            self.started = True
            size = self._record.size_bytes
            self._job.emit(IngestProgress(IngestStage.RECEIVED, size, size, "bytes received"))
        self._job.emit(IngestProgress(IngestStage.TRANSCRIBED, round(done), round(total),
                                      f"transcribed {done:.1f} of {total:.1f} s of audio"
                                      + (f" (language: {language})" if language else "")))
