"""The ingestion's settings and its first stages, parse and chunk: they run before the first event,
so bad input fails the call with its own status (see ``pipeline``)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from services.rag.documents import Chunk, DocumentRecord, ParsedDocument, Provenance, chunk_id_of
from services.rag.ingest.chunking import ChunkerConfig, chunk_sections
from services.rag.ingest.formats import FileType
from services.rag.ingest.ocr import OcrProgress, PageReader
from services.rag.ingest.parse_guard import parse_or_refuse
from services.rag.ingest.parser_pool import ParserPool
from services.rag.ingest.parser_worker import ParseJob
from services.rag.ingest.parsers import AudioReader, ParseLimits
from services.rag.ingest.parsers.limits import too_large
from services.rag.ingest.progress import OcrEvents
from services.rag.ingest.timecodes import time_range, touched
from services.runtime.errors import ResourceExhausted
from services.speech.transcriber import Lane


@dataclass(frozen=True)
class PipelineConfig:
    max_upload_bytes: int = 25 * 1024 * 1024
    chunker: ChunkerConfig = field(default_factory=ChunkerConfig)
    limits: ParseLimits = field(default_factory=ParseLimits)
    ocr: PageReader | None = None
    """Reads scanned PDF pages and page images; None: such documents are refused."""
    audio: AudioReader | None = None
    """Transcribes audio and video documents; None: they are refused."""
    parsers: ParserPool | None = None
    """Worker processes that parse every document but recordings; None: parsed in this process."""
    embed_progress_every: int = 128
    max_tenant_chunks: int = 0
    """Chunks one tenant may hold over all its documents (0: no quota)."""
    lease_s: float = 30.0
    """The metadata store's lease length: renewed every third of it, and waited on in steps of a sixth."""

    @property
    def heartbeat_s(self) -> float:
        return self.lease_s / 3

    @property
    def poll_s(self) -> float:
        return min(1.0, self.lease_s / 6)


async def parse_document(config: PipelineConfig, record: DocumentRecord, data: bytes, ocr: OcrEvents,
                         before: Callable[[], None] = lambda: None) -> ParsedDocument:
    """In a worker thread, after ``before`` in the same thread (the stage's status write): a recording's on
    the speech pool, so queued ones hold none of the loop's threads."""
    audio = config.audio
    if config.parsers is not None and record.file_type != FileType.AUDIO.value:
        job = ParseJob(FileType(record.file_type), data, config.limits, record.document_id, config.ocr)
        return await config.parsers.parse(job, ocr.on_page, before)
    if audio is None or record.file_type != FileType.AUDIO.value:
        return await asyncio.to_thread(_parse, config, record, data, ocr.on_page, ocr.on_seconds, before)
    call = functools.partial(contextvars.copy_context().run, _parse, config, record, data, ocr.on_page,
                             ocr.on_seconds, before)
    return await asyncio.get_running_loop().run_in_executor(audio.transcriber.executor(Lane.DOCUMENT), call)


def _parse(config: PipelineConfig, record: DocumentRecord, data: bytes, on_ocr_page: OcrProgress,
           on_audio: Callable[[float, float, str], None] | None = None,
           before: Callable[[], None] = lambda: None) -> ParsedDocument:
    before()
    return parse_or_refuse(data, FileType(record.file_type), config.limits, record.document_id, config.ocr,
                           on_ocr_page, config.audio, on_audio)


def chunk_document(config: PipelineConfig, record: DocumentRecord, parsed: ParsedDocument,
                   stored_chunks: Callable[[str], int]) -> list[Chunk]:
    """The document's chunks, within the per-document cap and the tenant's quota (``stored_chunks``: what
    the tenant holds already)."""
    spans = chunk_sections(parsed.sections, config.chunker)
    _check_chunk_caps(config, record, len(spans), stored_chunks)
    chunks = []
    for ordinal, span in enumerate(spans):
        section = parsed.sections[span.section_index]
        start_s, end_s = time_range(section.time_starts, span.start, span.end)
        chunks.append(Chunk(
            chunk_id=chunk_id_of(record, ordinal),
            tenant=record.tenant,
            ordinal=ordinal,
            text=section.text[span.start:span.end],
            provenance=Provenance(
                document_id=record.target_id, filename=record.filename, page=section.page,
                sheet_name=section.sheet_name, row_start=span.row_start, row_end=span.row_end,
                heading_path=section.heading_path, char_start=span.start, char_end=span.end,
                section_index=span.section_index, start_seconds=start_s, end_seconds=end_s,
                time_starts=touched(section.time_starts, span.start, span.end), version=record.version,
            ),
        ))
    return chunks


def _check_chunk_caps(config: PipelineConfig, record: DocumentRecord, count: int,
                      stored_chunks: Callable[[str], int]) -> None:
    """Chunks per document (a property of the file: 400) and per tenant (a quota: 429, which limit in the reason).

    The tenant's count is of its READY documents; documents ingesting at the same time are not counted
    against each other, so a burst of uploads may pass the quota by at most their own chunks."""
    limit = config.limits.max_chunks
    if count > limit:
        raise too_large(f"chunks ({count} at DOCUTHINKER_RAG_CHUNK_SIZE)", limit, "TOO_MANY_CHUNKS")
    quota = config.max_tenant_chunks
    if quota:
        stored = stored_chunks(record.tenant)
        if stored + count > quota:
            raise ResourceExhausted(
                f"tenant {record.tenant!r} holds {stored} chunks; this document's {count} would pass its quota "
                f"of {quota}: delete documents or raise DOCUTHINKER_RAG_MAX_TENANT_CHUNKS",
                reason="TENANT_CHUNK_QUOTA",
                metadata={"limit": str(quota), "stored": str(stored), "chunks": str(count),
                          "setting": "DOCUTHINKER_RAG_MAX_TENANT_CHUNKS"},
            )
