"""Domain types of the document library: records, extracted sections, chunks and events.

Plain frozen dataclasses; the servicer maps them to protobuf. Enum values equal the proto
enum numbers, so the mapping is a cast, but domain code never imports generated modules.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import IntEnum


class DocumentStatus(IntEnum):
    PENDING = 1
    PARSING = 2
    CHUNKING = 3
    EMBEDDING = 4
    INDEXING = 5
    READY = 6
    FAILED = 7

    @property
    def terminal(self) -> bool:
        return self in (DocumentStatus.READY, DocumentStatus.FAILED)


class GraphSyncState(IntEnum):
    PENDING = 1
    SYNCED = 2
    DISABLED = 3


class IngestStage(IntEnum):
    RECEIVED = 1
    PARSED = 2
    CHUNKED = 3
    EMBEDDED = 4
    INDEXED = 5
    GRAPH_SYNCED = 6
    OCR = 7
    TRANSCRIBED = 20
    """Seconds of a recording transcribed so far (audio and video uploads)."""


@dataclass(frozen=True)
class DocumentRecord:
    """One stored document and what ingestion learned about it (a row of the metadata store)."""

    document_id: str
    tenant: str
    filename: str
    file_type: str
    content_type: str
    content_sha256: str
    size_bytes: int
    status: DocumentStatus
    create_time: float
    update_time: float
    error_message: str = ""
    page_count: int = 0
    sheet_names: tuple[str, ...] = ()
    chunk_count: int = 0
    graph_sync: GraphSyncState = GraphSyncState.DISABLED
    title: str = ""


@dataclass(frozen=True)
class Section:
    """A unit of extracted text: a page, a sheet's block of rows, or a heading's block.

    ``row_starts`` marks where each table row begins in ``text`` as (char offset, 1-based row
    number), sorted by offset, so a span of the text maps back to the rows it covers.
    """

    text: str
    page: int = 0
    sheet_name: str = ""
    heading_path: tuple[str, ...] = ()
    row_starts: tuple[tuple[int, int], ...] = ()
    time_starts: tuple[tuple[int, float, float], ...] = ()
    """Transcripts: (char offset, start s, end s) of each spoken segment, sorted by offset."""


@dataclass(frozen=True)
class ParsedDocument:
    sections: tuple[Section, ...]
    page_count: int = 0
    sheet_names: tuple[str, ...] = ()
    title: str = ""

    @property
    def char_count(self) -> int:
        return sum(len(s.text) for s in self.sections)


@dataclass(frozen=True)
class Provenance:
    """Where a chunk came from; ``char_start:char_end`` slices its section's text exactly."""

    document_id: str
    filename: str
    page: int
    sheet_name: str
    row_start: int
    row_end: int
    heading_path: tuple[str, ...]
    char_start: int
    char_end: int
    section_index: int
    start_seconds: float = 0.0
    """Recordings: where the chunk's speech starts and ends (0 and 0 for other documents)."""
    end_seconds: float = 0.0
    time_starts: tuple[tuple[int, float, float], ...] = ()
    """The section's segments the chunk touches (see ``Section.time_starts``), to time a span inside it."""


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    tenant: str
    ordinal: int
    text: str
    provenance: Provenance

    @property
    def document_id(self) -> str:
        return self.provenance.document_id


@dataclass(frozen=True)
class IngestProgress:
    stage: IngestStage
    done: int
    total: int
    message: str = ""


@dataclass(frozen=True)
class IngestOutcome:
    document: DocumentRecord
    duplicate: bool = False


IngestEvent = IngestProgress | IngestOutcome


@dataclass(frozen=True)
class DocumentText:
    document: DocumentRecord
    sections: tuple[Section, ...] = field(default_factory=tuple)


def document_id_for(tenant: str, content_sha256: str) -> str:
    """Same bytes and tenant give the same id, so a repeated upload finds its document."""
    return hashlib.sha256(f"doc\x1f{tenant}\x1f{content_sha256}".encode()).hexdigest()[:24]


def chunk_id_for(tenant: str, content_sha256: str, position: int) -> str:
    """Deterministic chunk id: a retried ingest rewrites the same ids instead of adding new ones."""
    return hashlib.sha256(f"chunk\x1f{tenant}\x1f{content_sha256}\x1f{position}".encode()).hexdigest()[:32]


def vector_key(chunk_id: str) -> int:
    """The 63-bit integer id of a chunk in FAISS, derived from its id so no mapping is stored."""
    return int(chunk_id[:15], 16)
