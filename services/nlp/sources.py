"""Resolves an NLP request's input: inline text, or a stored document's text fetched from RAG."""

from __future__ import annotations

from typing import Protocol

import grpc

from services.clients.rag import RagApi
from services.runtime.errors import (
    FailedPrecondition,
    FieldViolation,
    InvalidArgument,
    NotFound,
    RemoteError,
    Unavailable,
)

MAX_TEXT_CHARS = 2_000_000


class DocumentTexts(Protocol):
    """Where the text of a stored document comes from (the RAG service in the mesh)."""

    async def fetch(self, document_id: str) -> str: ...


class RagDocumentTexts:
    """``RagService.GetDocumentText`` through the typed client (tenant, request id and deadline propagate)."""

    def __init__(self, rag: RagApi) -> None:
        self._rag = rag

    async def fetch(self, document_id: str) -> str:
        try:
            document = await self._rag.document_text(document_id)
        except RemoteError as exc:
            # What NLP's caller can act on: the document it named, not RAG's own wording.
            if exc.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNIMPLEMENTED):
                raise Unavailable(
                    f"cannot fetch document {document_id!r}: the RAG service is unavailable ({exc.status.message or exc.code.name})",
                    reason="RAG_UNAVAILABLE",
                    metadata={"document_id": document_id},
                ) from exc
            if exc.code == grpc.StatusCode.NOT_FOUND:
                raise NotFound(
                    f"document {document_id!r} does not exist for this tenant",
                    reason="DOCUMENT_NOT_FOUND",
                    metadata={"document_id": document_id},
                ) from exc
            raise
        # Sections are pages, sheets or heading blocks: a blank line keeps them apart as paragraphs.
        return "\n\n".join(s.strip() for s in document.sections if s.strip())


def validate_text(text: str, field: str = "text", limit: int = MAX_TEXT_CHARS) -> str:
    if not text or not text.strip():
        raise InvalidArgument(
            f"{field} is empty: send non-blank text or a document_id",
            reason="EMPTY_TEXT",
            violations=[FieldViolation(field, "must contain non-whitespace text")],
        )
    if len(text) > limit:
        raise InvalidArgument(
            f"{field} has {len(text)} characters; the limit is {limit}",
            reason="TEXT_TOO_LARGE",
            metadata={"limit": str(limit), "size": str(len(text)), "setting": "DOCUTHINKER_NLP_MAX_TEXT_CHARS"},
        )
    return text


async def resolve_text(request, documents: DocumentTexts | None = None, limit: int = MAX_TEXT_CHARS) -> str:
    """The text of a request with a ``source`` oneof of ``text`` or ``document_id``."""
    which = request.WhichOneof("source")
    if which == "text":
        return validate_text(request.text, "text", limit)
    if which == "document_id":
        document_id = request.document_id.strip()
        if not document_id:
            raise InvalidArgument(
                "document_id is empty", violations=[FieldViolation("document_id", "must not be empty")]
            )
        if documents is None:
            raise Unavailable("stored documents cannot be read here: no RAG client", reason="RAG_UNAVAILABLE")
        text = await documents.fetch(document_id)
        if not text.strip():
            raise FailedPrecondition(
                f"document {document_id!r} has no extractable text (e.g. a scan without a text layer)",
                reason="DOCUMENT_HAS_NO_TEXT",
                metadata={"document_id": document_id},
            )
        return validate_text(text, "document text", limit)
    raise InvalidArgument(
        "either text or document_id is required",
        reason="MISSING_SOURCE",
        violations=[FieldViolation("text", "text or document_id is required")],
    )
