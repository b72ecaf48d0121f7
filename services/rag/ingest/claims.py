"""Which document row an upload claims, and the names documents may be uploaded under.

Run in a worker thread against the metadata store: an upload of new bytes claims its content-derived document, a
named upload its named document or a staging row for its next version; either finds a duplicate of what is live,
or nothing while another replica holds what it needs (the caller waits and asks again). Separate from the jobs
(``pipeline``) because these are the store's decisions, with no event loop, lease or lock in them.
"""

from __future__ import annotations

import time

from services.rag.documents import (
    DocumentRecord,
    DocumentStatus,
    GraphSyncState,
    document_id_for_key,
    staging_id_for,
)
from services.rag.ingest.formats import Upload
from services.rag.store.ports import MetadataPort
from services.runtime.errors import FieldViolation, InvalidArgument

MAX_KEY_CHARS = 1024


def check_key(key: str) -> str:
    """A document name: at most ``MAX_KEY_CHARS`` characters, no control characters (INVALID_ARGUMENT)."""
    if len(key) > MAX_KEY_CHARS or any(ord(ch) < 32 or ord(ch) == 127 for ch in key) or not key.strip():
        raise InvalidArgument(f"document_key must be 1 to {MAX_KEY_CHARS} printable characters",
                              reason="INVALID_DOCUMENT_KEY",
                              violations=[FieldViolation("document_key", "printable, at most 1024 characters")])
    return key


def claim_new(metadata: MetadataPort, tenant: str, document_id: str, sha: str,
              upload: Upload, graph_sync: GraphSyncState) -> tuple[DocumentRecord, bool] | None:
    """In a worker thread: (the READY document, True) for bytes already ingested; (the new PENDING record,
    False) once this replica holds the lease on it; None while another replica ingests the same bytes."""
    existing = metadata.get_document(tenant, document_id)
    if existing is not None and existing.status is DocumentStatus.READY:
        return existing, True
    now = time.time()
    record = DocumentRecord(
        document_id=document_id, tenant=tenant, filename=upload.filename,
        file_type=upload.file_type.value, content_type=upload.content_type, content_sha256=sha,
        size_bytes=len(upload.data), status=DocumentStatus.PENDING,
        create_time=existing.create_time if existing else now, update_time=now,
        graph_sync=graph_sync,
    )
    return (record, False) if metadata.upsert_document(record) else None


def named_target(metadata: MetadataPort, tenant: str, key: str) -> str:
    """The document a name stands for: an existing document's own id, else the id derived from the name."""
    existing = metadata.get_document(tenant, key)
    return key if existing is not None and not existing.version_of else document_id_for_key(tenant, key)


def claim_named(metadata: MetadataPort, tenant: str, target: str, key: str, sha: str,
                upload: Upload, graph_sync: GraphSyncState) -> tuple[str, DocumentRecord] | None:
    """In a worker thread: ("duplicate", the document) for its live bytes; ("new", the claimed record) for
    a document's first version (or one whose last ingestion failed, taken again in place); ("staged", the
    claimed staging row) for a new version; None while another replica holds what this needs."""
    existing = metadata.get_document(tenant, target)
    now = time.time()
    if existing is not None and existing.status is DocumentStatus.READY:
        if existing.content_sha256 == sha:
            return "duplicate", existing
        staging = DocumentRecord(
            document_id=staging_id_for(tenant, target, sha), tenant=tenant, filename=upload.filename,
            file_type=upload.file_type.value, content_type=upload.content_type, content_sha256=sha,
            size_bytes=len(upload.data), status=DocumentStatus.PENDING, create_time=now, update_time=now,
            graph_sync=graph_sync, version=0, version_of=target)
        try:
            claimed = metadata.claim_version(staging)
        except LookupError:
            return None  # deleted meanwhile: the next look creates it anew
        return None if claimed is None else ("staged", claimed)
    record = DocumentRecord(
        document_id=target, tenant=tenant, filename=upload.filename, file_type=upload.file_type.value,
        content_type=upload.content_type, content_sha256=sha, size_bytes=len(upload.data),
        status=DocumentStatus.PENDING, create_time=existing.create_time if existing else now, update_time=now,
        graph_sync=graph_sync, version=existing.version if existing else 1,
        key=existing.key if existing else (key if target != key else ""))
    return ("new", record) if metadata.upsert_document(record) else None
