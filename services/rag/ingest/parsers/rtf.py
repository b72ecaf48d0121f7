"""RTF with striprtf: the text of the document (control words, fonts and pictures dropped),
its wrapped lines left as the author's paragraphs."""

from __future__ import annotations

from striprtf.striprtf import rtf_to_text

from services.rag.documents import ParsedDocument, Section
from services.rag.ingest.formats import FileType, corrupt
from services.rag.ingest.parsers.cleaning import clean_text
from services.rag.ingest.parsers.limits import ParseLimits, too_large


def parse_rtf(data: bytes, limits: ParseLimits) -> ParsedDocument:
    if len(data) > 4 * limits.max_text_chars:
        raise too_large("extracted characters", limits.max_text_chars, "TOO_MUCH_TEXT")
    # RTF is 7-bit ASCII; \'hh escapes and \uN carry everything else (in the declared code page).
    source = data.decode("latin-1")
    try:
        text = clean_text(rtf_to_text(source, errors="replace"))
    except (ValueError, IndexError, LookupError) as exc:
        raise corrupt(FileType.RTF, str(exc) or type(exc).__name__) from exc
    if len(text) > limits.max_text_chars:
        raise too_large("extracted characters", limits.max_text_chars, "TOO_MUCH_TEXT")
    text = "\n".join(line.rstrip() for line in text.split("\n")).strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return ParsedDocument((Section(text=text),) if text else (), title=first[:200])
