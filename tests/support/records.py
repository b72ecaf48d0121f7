"""One builder for rag's records in tests: a document row and its chunks, shaped as ingestion builds them.

Defaults are the plainest document (a PENDING ``doc.txt`` of tenant ``acme``); a test names only what it is about.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence

from services.rag.documents import (
    Chunk,
    DocumentRecord,
    DocumentStatus,
    GraphSyncState,
    Provenance,
    chunk_id_for,
    document_id_for,
)


def document(text: str = "", *, tenant: str = "acme", document_id: str | None = None, filename: str = "doc.txt",
             file_type: str = "text", content_type: str = "text/plain", content_sha256: str | None = None,
             size_bytes: int | None = None, status: DocumentStatus = DocumentStatus.PENDING,
             graph_sync: GraphSyncState = GraphSyncState.DISABLED, chunk_count: int = 0,
             title: str = "") -> DocumentRecord:
    """A document row; its id and content hash follow from ``text`` unless given, as an upload's do."""
    sha = content_sha256 or hashlib.sha256(text.encode()).hexdigest()
    now = time.time()
    return DocumentRecord(
        document_id=document_id or document_id_for(tenant, sha), tenant=tenant, filename=filename,
        file_type=file_type, content_type=content_type, content_sha256=sha,
        size_bytes=len(text) if size_bytes is None else size_bytes, status=status, create_time=now, update_time=now,
        chunk_count=chunk_count, graph_sync=graph_sync, title=title,
    )


def chunk(text: str, *, tenant: str = "acme", document_id: str = "doc-1", ordinal: int = 0,
          filename: str = "doc.txt", page: int = 1, char_start: int = 0, chunk_id: str | None = None,
          content_sha256: str | None = None) -> Chunk:
    """One chunk; its id derives from the document (or ``content_sha256``) and ordinal unless given."""
    return Chunk(
        chunk_id=chunk_id or chunk_id_for(tenant, content_sha256 or document_id, ordinal), tenant=tenant,
        ordinal=ordinal, text=text,
        provenance=Provenance(document_id, filename, page, "", 0, 0, (), char_start, char_start + len(text), 0),
    )


def chunks_of(record: DocumentRecord, texts: Sequence[str], *, page: int = 0, separator: str = "\n\n") -> list[Chunk]:
    """The chunks of ``record`` holding ``texts`` in order, their offsets into the texts joined by ``separator``."""
    chunks, offset = [], 0
    for ordinal, text in enumerate(texts):
        chunks.append(chunk(text, tenant=record.tenant, document_id=record.document_id, ordinal=ordinal,
                            filename=record.filename, page=page, char_start=offset,
                            content_sha256=record.content_sha256))
        offset += len(text) + len(separator)
    return chunks
