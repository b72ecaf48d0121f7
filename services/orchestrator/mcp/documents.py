"""Which stored document an MCP tool argument names: its id, the start of its id, or its file name.

MCP hosts (and the people typing into them) know a document by name ("harbour-report.pdf") or by the first
characters of its id as ``list_documents`` showed it; tools take any of these. An ambiguous or unknown
reference is an INVALID_ARGUMENT / NOT_FOUND that lists what matched, so the host can ask again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.runtime.errors import FieldViolation, InvalidArgument, NotFound

MIN_PREFIX = 4


def summary(document: dict[str, Any]) -> dict[str, Any]:
    """What ``list_documents`` shows of a document."""
    return {"document_id": document.get("document_id", ""), "filename": document.get("filename", ""),
            "title": document.get("title", ""), "file_type": document.get("file_type", ""),
            "status": str(document.get("status", "")).removeprefix("DOCUMENT_STATUS_").lower(),
            "pages": int(document.get("page_count", 0) or 0), "chunks": int(document.get("chunk_count", 0) or 0),
            "created": document.get("create_time", "")}


def resolve(reference: str, documents: Sequence[dict[str, Any]], field: str = "documentId") -> dict[str, Any]:
    ref = reference.strip()
    if not ref:
        raise InvalidArgument(f"{field} is empty", reason="MISSING_DOCUMENT",
                              violations=[FieldViolation(field, "a document id, its first characters, or a file name")])
    low = ref.casefold()
    tiers = [
        [d for d in documents if d.get("document_id") == ref],
        [d for d in documents if str(d.get("filename", "")).casefold() == low],
        [d for d in documents if len(ref) >= MIN_PREFIX and str(d.get("document_id", "")).startswith(ref)],
        [d for d in documents if low in str(d.get("filename", "")).casefold()
         or low in str(d.get("title", "")).casefold()],
    ]
    for found in tiers:
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            names = ", ".join(f"{d.get('filename')} ({str(d.get('document_id'))[:12]})" for d in found[:8])
            raise InvalidArgument(f"{field} {ref!r} matches {len(found)} documents: {names}; give more of the name"
                                  " or the id", reason="AMBIGUOUS_DOCUMENT",
                                  violations=[FieldViolation(field, "one document")])
    raise NotFound(f"no document matches {ref!r} (see list_documents)", reason="DOCUMENT_NOT_FOUND",
                   metadata={"reference": ref})
