"""Rows of document versions, the same on both metadata stores (``sqlite_versions``, ``pg_versions``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from services.rag.documents import Chunk, DocumentRecord, DocumentStatus, Section
from services.rag.store.rows import CHUNK_INSERT_COLUMNS, chunk_values
from services.rag.versions.model import DocumentVersion, StoredVector, VersionState

ARCHIVE_COLUMNS = f"{CHUNK_INSERT_COLUMNS}, start_seconds, end_seconds, time_starts, vector"
ARCHIVED_CHUNK = (
    "a.chunk_id, a.tenant, a.document_id, a.ordinal, a.section_index, a.text, a.filename, a.page, a.sheet_name, "
    "a.row_start, a.row_end, a.heading_path, a.char_start, a.char_end, a.version, "
    "a.start_seconds AS t_start_seconds, a.end_seconds AS t_end_seconds, a.time_starts AS t_time_starts"
)
SECTION_COLUMNS = "page, sheet_name, heading_path, row_starts, text"
REPUBLISHED = ", ".join(f"{c}=excluded.{c}" for c in (
    "filename", "file_type", "content_type", "content_sha256", "size_bytes", "page_count", "sheet_names", "title",
    "chunk_count", "chunks_embedded", "chunks_reused", "superseded_time"))
"""A version published again (a re-index) keeps its creation time and takes everything else anew."""
LIVE_CHUNK = ", ".join(f"c.{name.strip()}" for name in CHUNK_INSERT_COLUMNS.split(","))
"""``CHUNK_INSERT_COLUMNS`` of a live chunk row ``c`` (copied to the archive)."""


def vector_blob(vector: np.ndarray | None) -> bytes | None:
    return None if vector is None else np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def archive_rows(chunks: Sequence[Chunk], vectors: Mapping[str, np.ndarray | None],
                 document_id: str) -> list[tuple]:
    """Archive rows of chunks, each with its vector (None when it has none) and its time codes."""
    rows = []
    for c in chunks:
        p = c.provenance
        times = json.dumps([list(t) for t in p.time_starts]) if p.time_starts else None
        rows.append((*chunk_values(c, document_id), p.start_seconds if times else None,
                     p.end_seconds if times else None, times, vector_blob(vectors.get(c.chunk_id))))
    return rows


def version_row(record: DocumentRecord, embedded: int, reused: int, created: float,
                superseded: float | None = None) -> tuple:
    """A ``document_versions`` row of a published version (the record is the document at that version)."""
    return (record.target_id, record.version, record.tenant, record.filename, record.file_type, record.content_type,
            record.content_sha256, record.size_bytes, record.page_count, json.dumps(list(record.sheet_names)),
            record.title, record.chunk_count, embedded, reused, created, superseded)


def version_from_row(row: Mapping[str, Any]) -> DocumentVersion:
    return DocumentVersion(
        document_id=row["document_id"], version=row["version"],
        state=VersionState.LIVE if row["superseded_time"] is None else VersionState.SUPERSEDED,
        filename=row["filename"], file_type=row["file_type"], content_type=row["content_type"],
        content_sha256=row["content_sha256"], size_bytes=row["size_bytes"], create_time=row["create_time"],
        page_count=row["page_count"], title=row["title"], chunk_count=row["chunk_count"],
        chunks_embedded=row["chunks_embedded"], chunks_reused=row["chunks_reused"],
        superseded_time=row["superseded_time"])


def version_of_record(record: DocumentRecord, state: VersionState) -> DocumentVersion:
    """A version described by a documents row: a staging row's, or a live version from before versions."""
    return DocumentVersion(
        document_id=record.target_id, version=record.version, state=state, filename=record.filename,
        file_type=record.file_type, content_type=record.content_type, content_sha256=record.content_sha256,
        size_bytes=record.size_bytes, create_time=record.create_time, page_count=record.page_count,
        title=record.title, chunk_count=record.chunk_count, chunks_embedded=record.chunk_count,
        error_message=record.error_message)


def merge_versions(rows: Sequence[DocumentVersion], live: DocumentRecord | None,
                   staging: Sequence[DocumentRecord]) -> list[DocumentVersion]:
    """Every version of a document, newest first: published ones (a live one from before versions has no row
    yet: its documents row stands for it), then those being ingested or failed on staging rows."""
    found = {v.version: v for v in rows}
    if live is not None and live.status is DocumentStatus.READY and live.version not in found:
        found[live.version] = version_of_record(live, VersionState.LIVE)
    for row in staging:
        if row.version not in found:
            state = VersionState.FAILED if row.status is DocumentStatus.FAILED else VersionState.INGESTING
            found[row.version] = version_of_record(row, state)
    return sorted(found.values(), key=lambda v: v.version, reverse=True)


def section_from_row(row: Mapping[str, Any]) -> Section:
    return Section(text=row["text"], page=row["page"], sheet_name=row["sheet_name"],
                   heading_path=tuple(json.loads(row["heading_path"])),
                   row_starts=tuple(tuple(x) for x in json.loads(row["row_starts"])))


def stored_vector(row: Mapping[str, Any]) -> StoredVector:
    blob = row["vector"]
    vector = None if blob is None else np.frombuffer(bytes(blob), dtype=np.float32)
    return StoredVector(row["chunk_id"], row["text"], vector)
