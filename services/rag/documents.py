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
    version: int = 1
    """The version this row describes: the live one of a document, the one being ingested of a staging row."""
    key: str = ""
    """The stable name a client or a source gave the document (its id is derived from it); "" for plain uploads."""
    version_of: str = ""
    """A staging row (a new version being ingested beside the live one): the document it will become; "" otherwise."""

    @property
    def target_id(self) -> str:
        """The document this row's chunks belong to: itself, or the document a staging row becomes."""
        return self.version_of or self.document_id

    @property
    def versioned(self) -> bool:
        """Its chunk ids name the document and version (not only the bytes): a named document or a later version."""
        return bool(self.key or self.version_of) or self.version > 1


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
    version: int = 1
    """The version of the document the chunk is of (answers cite it)."""


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
    chunks_embedded: int = 0
    """Chunks this ingestion embedded; the rest of the document's chunks reused an earlier version's vectors."""
    chunks_reused: int = 0


IngestEvent = IngestProgress | IngestOutcome


@dataclass(frozen=True)
class DocumentText:
    document: DocumentRecord
    sections: tuple[Section, ...] = field(default_factory=tuple)


def document_id_for(tenant: str, content_sha256: str) -> str:
    """Same bytes and tenant give the same id, so a repeated upload finds its document."""
    return hashlib.sha256(f"doc\x1f{tenant}\x1f{content_sha256}".encode()).hexdigest()[:24]


def document_id_for_key(tenant: str, key: str) -> str:
    """A named document's id: every version uploaded under the same name (a source's path) is one document."""
    return hashlib.sha256(f"key\x1f{tenant}\x1f{key}".encode()).hexdigest()[:24]


def staging_id_for(tenant: str, document_id: str, content_sha256: str) -> str:
    """The staging row of new bytes for a document: a retried upload of the same bytes finds it again."""
    return hashlib.sha256(f"version\x1f{tenant}\x1f{document_id}\x1f{content_sha256}".encode()).hexdigest()[:24]


def chunk_id_for(tenant: str, content_sha256: str, position: int) -> str:
    """Deterministic chunk id: a retried ingest rewrites the same ids instead of adding new ones."""
    return hashlib.sha256(f"chunk\x1f{tenant}\x1f{content_sha256}\x1f{position}".encode()).hexdigest()[:32]


def chunk_id_of(record: DocumentRecord, position: int) -> str:
    """The id of a record's chunk: of its bytes for a plain upload (as ever), of its document and version for a
    named document or a later version, whose bytes another document or version may share."""
    if not record.versioned:
        return chunk_id_for(record.tenant, record.content_sha256, position)
    raw = f"chunk\x1f{record.tenant}\x1f{record.target_id}\x1f{record.version}\x1f{position}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def text_sha(text: str) -> str:
    """The content address of a chunk's text: equal texts share a vector across a document's versions."""
    return hashlib.sha256(text.encode()).hexdigest()


def vector_key(chunk_id: str) -> int:
    """The 63-bit integer id of a chunk in FAISS, derived from its id so no mapping is stored."""
    return int(chunk_id[:15], 16)
