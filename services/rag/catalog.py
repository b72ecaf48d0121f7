"""Reading and deleting stored documents: list (AIP-158 pages), get, extracted text, delete."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass

from services.rag.documents import DocumentRecord, DocumentStatus, DocumentText
from services.rag.graph_sync.port import DisabledGraphSync, GraphSync
from services.rag.locks import KeyedLocks
from services.rag.store.ports import BlobPort, ChunkIndexPort
from services.runtime.errors import FailedPrecondition, FieldViolation, InvalidArgument, NotFound

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100


@dataclass(frozen=True)
class DocumentPage:
    documents: tuple[DocumentRecord, ...]
    next_page_token: str
    total_size: int


def _encode_token(record: DocumentRecord) -> str:
    raw = json.dumps([record.create_time, record.document_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_token(token: str) -> tuple[float, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        create_time, document_id = json.loads(raw)
        return float(create_time), str(document_id)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise InvalidArgument(
            "invalid page_token: pass the next_page_token of a previous response",
            reason="INVALID_PAGE_TOKEN",
            violations=[FieldViolation("page_token", "not a token issued by ListDocuments")],
        ) from exc


def _not_found(document_id: str) -> NotFound:
    return NotFound(f"document {document_id!r} not found", reason="DOCUMENT_NOT_FOUND",
                    metadata={"document_id": document_id})


class DocumentCatalog:
    def __init__(self, index: ChunkIndexPort, blobs: BlobPort, locks: KeyedLocks,
                 on_change: Callable[[str], None] = lambda tenant: None, graph: GraphSync | None = None) -> None:
        self._index = index
        self._graph = graph or DisabledGraphSync()
        self._metadata = index.metadata
        self._blobs = blobs
        self._locks = locks
        self._on_change = on_change

    async def list(self, tenant: str, page_size: int, page_token: str) -> DocumentPage:
        if page_size < 0:
            raise InvalidArgument("page_size must not be negative", reason="INVALID_PAGE_SIZE",
                                  violations=[FieldViolation("page_size", "must be >= 0")])
        size = min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        after = _decode_token(page_token) if page_token else None
        rows = await asyncio.to_thread(self._metadata.list_documents, tenant, size + 1, after)
        total = await asyncio.to_thread(self._metadata.count_documents, tenant)
        page, more = rows[:size], len(rows) > size
        return DocumentPage(tuple(page), _encode_token(page[-1]) if more else "", total)

    async def get(self, tenant: str, document_id: str) -> DocumentRecord:
        if not document_id:
            raise InvalidArgument("document_id is required", reason="MISSING_DOCUMENT_ID",
                                  violations=[FieldViolation("document_id", "required")])
        record = await asyncio.to_thread(self._metadata.get_document, tenant, document_id)
        if record is None or record.version_of:  # a staging row is a version of its document, not one itself
            raise _not_found(document_id)
        return record

    async def text(self, tenant: str, document_id: str) -> DocumentText:
        record = await self.get(tenant, document_id)
        if record.status is not DocumentStatus.READY:
            raise FailedPrecondition(
                f"document {document_id!r} is {record.status.name.lower()}, not ready"
                + (f": {record.error_message}" if record.error_message else ""),
                reason="DOCUMENT_NOT_READY", metadata={"document_id": document_id, "status": record.status.name},
            )
        sections = await asyncio.to_thread(self._metadata.sections, document_id)
        return DocumentText(record, tuple(sections))

    async def content(self, tenant: str, document_id: str) -> tuple[DocumentRecord, bytes]:
        """The document and its stored original bytes (NOT_FOUND for another tenant's document)."""
        record = await self.get(tenant, document_id)
        data = await asyncio.to_thread(self._blobs.get, tenant, record.content_sha256)
        if data is None:
            raise NotFound(f"the original file of document {document_id!r} is no longer stored",
                           reason="CONTENT_NOT_FOUND", metadata={"document_id": document_id})
        return record, data

    async def delete(self, tenant: str, document_id: str) -> int:
        """Removes the document, every version of it (chunks, vectors, sections, staged versions) from SQLite, the
        vector log, FAISS and BM25, its facts from the graph, and the original bytes of every version."""
        await self.get(tenant, document_id)
        async with self._locks.hold(document_id):
            # Looked up again under the lock: an ingest that held it may have dropped a bad upload.
            record = await self.get(tenant, document_id)
            shas = await asyncio.to_thread(self._metadata.version_shas, tenant, document_id)
            # Queued before the removal: a crash in between leaves a delete the graph worker re-checks.
            await self._graph.forget(record)
            removed = await asyncio.to_thread(self._index.remove_document, tenant, document_id)
            await asyncio.to_thread(self._drop_blobs, tenant, shas)
            # Rebuild BM25 now rather than later, so the index on disk no longer holds the chunks.
            await asyncio.to_thread(self._index.keyword.refresh, tenant)
        self._on_change(tenant)
        return removed

    def _drop_blobs(self, tenant: str, shas: set[str]) -> None:
        """The original bytes no document or version of the tenant has any more (another may share them)."""
        for sha in sorted(shas):
            if not self._metadata.content_in_use(tenant, sha):
                self._blobs.delete(tenant, sha)
