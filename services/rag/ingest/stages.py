"""One document's ingestion, stage by stage, under a lease its job already holds: parse, chunk, embed (reusing
an earlier version's vectors), stage and publish the vectors, then the graph sync; and on failure, the undoing
(bad input forgotten, anything else FAILED with its bytes kept).

Separate from the jobs (``pipeline``), which decide which document an upload, re-index or sweep works on and hold
its lock and lease: this module is what is done to the document once they do. ``IngestionPipeline`` extends
``DocumentIngestion`` with those jobs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from services.rag.documents import (
    Chunk,
    DocumentRecord,
    DocumentStatus,
    GraphSyncState,
    IngestOutcome,
    IngestProgress,
    IngestStage,
    ParsedDocument,
)
from services.rag.graph_sync.port import GraphSync
from services.rag.ingest.embedding import TextEmbedder, embed_in_groups
from services.rag.ingest.jobs import IngestJob, StageTimer
from services.rag.ingest.parser_pool import ParserPool
from services.rag.ingest.preparation import PipelineConfig, chunk_document, parse_document
from services.rag.ingest.progress import OcrEvents
from services.rag.ingest.takeover import HeldLease
from services.rag.locks import KeyedLocks
from services.rag.store.leases import LeaseLost
from services.rag.store.ports import BlobPort, ChunkIndexPort
from services.rag.versions.indexing import promote, reusable_vectors
from services.rag.versions.model import TargetBusy
from services.runtime import domain_metrics
from services.runtime.errors import Aborted, DomainError

log = logging.getLogger("docuthinker.rag.ingest")

MAX_PARSE_ATTEMPTS = 2
"""Parses of one document begun and never finished (the service died reading it) before a restart stops
resuming it: the document goes FAILED with the reason instead of crash-looping the service."""


def deleted_during_ingestion(document_id: str) -> Aborted:
    return Aborted(f"document {document_id} was deleted while it was being ingested", reason="DELETED_DURING_INGEST",
                   metadata={"document_id": document_id})


class DocumentIngestion:
    """The stores, the embedder and the settings an ingestion uses, and its stages (see the module doc)."""

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
        """The running jobs (``IngestionPipeline`` spawns them)."""

    @property
    def embedder(self) -> TextEmbedder:
        return self._embedder_factory()

    @property
    def parsers(self) -> ParserPool | None:
        """The parser worker processes (None: documents are parsed in this process)."""
        return self._config.parsers


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
        except Exception as exc:
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
