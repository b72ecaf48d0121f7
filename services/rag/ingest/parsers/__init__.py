"""One parser per format, each returning a ``ParsedDocument`` of text sections.

``parse`` dispatches on the detected type and refuses documents with no extractable text.
Parsers are synchronous and CPU-bound: callers run them in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable

from services.rag.documents import ParsedDocument
from services.rag.ingest.formats import FileType
from services.rag.ingest.ocr import OcrProgress, PageReader
from services.rag.ingest.parsers.audio import AudioReader, parse_audio
from services.rag.ingest.parsers.delimited import parse_delimited
from services.rag.ingest.parsers.html import parse_html
from services.rag.ingest.parsers.image import parse_image
from services.rag.ingest.parsers.limits import ParseLimits
from services.rag.ingest.parsers.markdown import parse_markdown
from services.rag.ingest.parsers.pdf import parse_pdf
from services.rag.ingest.parsers.plaintext import parse_text
from services.rag.ingest.parsers.spreadsheet import parse_xlsx
from services.rag.ingest.parsers.word import parse_docx
from services.runtime.errors import FieldViolation, InvalidArgument
from services.speech.transcriber import Progress

__all__ = ["AudioReader", "ParseLimits", "parse"]

_PARSERS: dict[FileType, Callable[[bytes, ParseLimits], ParsedDocument]] = {
    FileType.DOCX: parse_docx,
    FileType.XLSX: parse_xlsx,
    FileType.CSV: lambda data, limits: parse_delimited(data, FileType.CSV, limits),
    FileType.TSV: lambda data, limits: parse_delimited(data, FileType.TSV, limits),
    FileType.HTML: parse_html,
    FileType.MARKDOWN: parse_markdown,
    FileType.TEXT: parse_text,
}


def parse(data: bytes, file_type: FileType, limits: ParseLimits, ocr: PageReader | None = None,
          on_ocr_page: OcrProgress | None = None, audio: AudioReader | None = None,
          on_audio: Progress | None = None) -> ParsedDocument:
    """``ocr`` reads scanned PDF pages and page images (None: OCR is off); ``on_ocr_page(done, total)``
    hears of its progress: once with 0 when it is about to start, then after every page. ``audio``
    transcribes recordings (None: speech is off); ``on_audio(seconds done, seconds total, language)`` likewise."""
    if file_type is FileType.AUDIO:
        parsed = parse_audio(data, limits, audio, on_audio)
    elif file_type is FileType.PDF:
        parsed = parse_pdf(data, limits, ocr, on_ocr_page)
    elif file_type is FileType.IMAGE:
        parsed = parse_image(data, limits, ocr, on_ocr_page)
    else:
        parsed = _PARSERS[file_type](data, limits)
    if not any(section.text.strip() for section in parsed.sections):
        hints = {FileType.PDF: " (blank pages?)", FileType.IMAGE: " (OCR found no words in the image)"}
        hint = hints.get(file_type, "")
        raise InvalidArgument(
            f"the document has no extractable text{hint}",
            reason="NO_EXTRACTABLE_TEXT",
            metadata={"file_type": file_type.value},
            violations=[FieldViolation("file", "no extractable text")],
        )
    return parsed
