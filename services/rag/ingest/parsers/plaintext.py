"""Plain text: encoding detected, one section for the whole text."""

from __future__ import annotations

from services.rag.documents import ParsedDocument, Section
from services.rag.ingest.parsers.cleaning import clean_text, decode_text
from services.rag.ingest.parsers.limits import ParseLimits, too_large


def parse_text(data: bytes, limits: ParseLimits) -> ParsedDocument:
    text = clean_text(decode_text(data))
    if len(text) > limits.max_text_chars:
        raise too_large("extracted characters", limits.max_text_chars, "TOO_MUCH_TEXT")
    sections = (Section(text=text),) if text.strip() else ()
    first_line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return ParsedDocument(sections, title=first_line[:200])
