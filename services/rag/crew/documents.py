"""The document an analysis is about: inline text (ingested first) or a stored document's id.

Inline text goes through the ordinary ingestion pipeline as a ``.txt`` upload, so it is
parsed, chunked, embedded and indexed like any upload (retrieval then works on it) and
deduplicated by content hash: the same text again is the same document, not a second copy.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol

from services.rag.documents import DocumentRecord, DocumentText, IngestEvent, IngestOutcome
from services.rag.graph_sync.feed import document_text
from services.runtime.errors import FieldViolation, InvalidArgument


class Uploads(Protocol):
    def upload(self, tenant: str, filename: str, content_type: str, data: bytes): ...


class Documents(Protocol):
    async def get(self, tenant: str, document_id: str) -> DocumentRecord: ...

    async def text(self, tenant: str, document_id: str) -> DocumentText: ...


@dataclass(frozen=True)
class ResolvedDocument:
    record: DocumentRecord
    ingested: bool
    """True when this request sent inline text through ingestion."""
    duplicate: bool = False
    """Inline text whose exact content was already stored (nothing re-indexed)."""


def text_filename(text: str) -> str:
    return f"text-{hashlib.sha256(text.encode()).hexdigest()[:12]}.txt"


class DocumentInputs:
    def __init__(self, uploads: Uploads, documents: Documents) -> None:
        self._uploads = uploads
        self._documents = documents

    async def resolve(self, tenant: str, text: str, document_id: str) -> ResolvedDocument:
        """The READY document for ``text`` (ingested now) or ``document_id`` (NOT_FOUND, or
        FAILED_PRECONDITION while it is not ready)."""
        if text and document_id:
            raise InvalidArgument("send either text or document_id, not both", reason="ONE_SOURCE",
                                  violations=[FieldViolation("text", "set text or document_id, not both")])
        if document_id.strip():
            view = await self._documents.text(tenant, document_id.strip())
            return ResolvedDocument(view.document, ingested=False)
        if not text.strip():
            raise InvalidArgument("nothing to analyse: send non-blank text or a document_id", reason="EMPTY_SOURCE",
                                  violations=[FieldViolation("text", "set non-blank text or a document_id")])
        events = self._uploads.upload(tenant, text_filename(text), "text/plain", text.encode())
        outcome = await _outcome(events)
        return ResolvedDocument(outcome.document, ingested=True, duplicate=outcome.duplicate)

    async def text(self, tenant: str, document_id: str, limit: int) -> str:
        """The document's text as NLP reads it (sections as paragraphs), at most ``limit`` characters."""
        view = await self._documents.text(tenant, document_id)
        return document_text(view.sections, limit)


async def _outcome(events) -> IngestOutcome:
    outcome = None
    event: IngestEvent
    async for event in events:
        if isinstance(event, IngestOutcome):
            outcome = event
    if outcome is None:
        raise RuntimeError("ingestion ended without an outcome")
    return outcome
