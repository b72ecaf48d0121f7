"""Resolves an NLP request's input: inline text, or a stored document fetched from RAG."""

from __future__ import annotations

from services.runtime.errors import FieldViolation, InvalidArgument, ResourceExhausted, Unimplemented

MAX_TEXT_CHARS = 2_000_000


def validate_text(text: str, field: str = "text", limit: int = MAX_TEXT_CHARS) -> str:
    if not text or not text.strip():
        raise InvalidArgument(
            f"{field} is empty: send non-blank text or a document_id",
            reason="EMPTY_TEXT",
            violations=[FieldViolation(field, "must contain non-whitespace text")],
        )
    if len(text) > limit:
        raise ResourceExhausted(
            f"{field} has {len(text)} characters; the limit is {limit}",
            reason="TEXT_TOO_LARGE",
            metadata={"limit": str(limit), "size": str(len(text))},
        )
    return text


async def resolve_text(request) -> str:
    """The text of a request with a ``source`` oneof of ``text`` or ``document_id``."""
    which = request.WhichOneof("source")
    if which == "text":
        return validate_text(request.text)
    if which == "document_id":
        raise Unimplemented("document_id input is not available yet; send text")
    raise InvalidArgument(
        "either text or document_id is required",
        reason="MISSING_SOURCE",
        violations=[FieldViolation("text", "text or document_id is required")],
    )
