"""One parser per format, each returning a ``ParsedDocument`` of text sections.

``parse`` dispatches on the detected type and refuses documents with no extractable text.
Parsers are synchronous and CPU-bound: callers run them in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable

from services.rag.documents import ParsedDocument
from services.rag.ingest.formats import FileType, check_signature
from services.rag.ingest.ocr import OcrProgress, PageReader
from services.rag.ingest.parsers.audio import AudioReader, parse_audio
from services.rag.ingest.parsers.delimited import parse_delimited
from services.rag.ingest.parsers.ebook import parse_epub
from services.rag.ingest.parsers.email_message import parse_eml
from services.rag.ingest.parsers.html import parse_html
from services.rag.ingest.parsers.image import parse_image
from services.rag.ingest.parsers.legacy_excel import parse_xls
from services.rag.ingest.parsers.limits import ParseLimits
from services.rag.ingest.parsers.markdown import parse_markdown
from services.rag.ingest.parsers.opendocument import parse_ods, parse_odt
from services.rag.ingest.parsers.pdf import PageStart, parse_pdf
from services.rag.ingest.parsers.plaintext import parse_text
from services.rag.ingest.parsers.presentation import parse_pptx
from services.rag.ingest.parsers.rtf import parse_rtf
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
    FileType.PPTX: parse_pptx,
    FileType.XLS: parse_xls,
    FileType.ODT: parse_odt,
    FileType.ODS: parse_ods,
    FileType.EPUB: parse_epub,
    FileType.RTF: parse_rtf,
}


def parse(data: bytes, file_type: FileType, limits: ParseLimits, ocr: PageReader | None = None,
          on_ocr_page: OcrProgress | None = None, audio: AudioReader | None = None,
          on_audio: Progress | None = None, on_page: PageStart | None = None) -> ParsedDocument:
    """``ocr`` reads scanned PDF pages and page images (None: OCR is off); ``on_ocr_page(done, total)``
    hears of its progress: once with 0 when it is about to start, then after every page. ``audio``
    transcribes recordings (None: speech is off); ``on_audio(seconds done, seconds total, language)`` likewise.
    ``on_page(n)`` hears that a PDF's page n is being read (0: no page any more)."""
    if file_type is FileType.AUDIO:
        parsed = parse_audio(data, limits, audio, on_audio)
    elif file_type is FileType.PDF:
        parsed = parse_pdf(data, limits, ocr, on_ocr_page, on_page)
    elif file_type is FileType.IMAGE:
        parsed = parse_image(data, limits, ocr, on_ocr_page)
    elif file_type is FileType.EML:

        def attachment(payload: bytes, kind: FileType, own_limits: ParseLimits) -> ParsedDocument:
            check_signature(kind, payload)
            return parse(payload, kind, own_limits, ocr)

        parsed = parse_eml(data, limits, attachment)
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
