"""Parsing that refuses malformed input with a domain error, whichever process runs it (the service, for
recordings; a parser worker, for everything else): the one function both call, so neither imports the other."""

from __future__ import annotations

import logging
from collections.abc import Callable

from services.rag.documents import ParsedDocument
from services.rag.ingest.formats import FileType, corrupt
from services.rag.ingest.ocr import OcrProgress, PageReader
from services.rag.ingest.parsers import AudioReader, ParseLimits, parse
from services.runtime.errors import DomainError

log = logging.getLogger("docuthinker.rag.ingest")


def parse_or_refuse(data: bytes, file_type: FileType, limits: ParseLimits, document_id: str,
                    ocr: PageReader | None = None, on_ocr_page: OcrProgress | None = None,
                    audio: AudioReader | None = None, on_audio: Callable[[float, float, str], None] | None = None,
                    on_page: Callable[[int], None] | None = None) -> ParsedDocument:
    """``parse``, with whatever a parser library raises on malformed input turned into a domain error
    (here or in a parser worker process)."""
    try:
        return parse(data, file_type, limits, ocr, on_ocr_page, audio, on_audio, on_page)
    except DomainError:
        raise
    except RecursionError as exc:
        raise corrupt(file_type, "it is nested too deeply") from exc
    except MemoryError:
        raise
    except Exception as exc:
        log.warning("parser failed", exc_info=exc, extra={"fields": {"document_id": document_id}})
        raise corrupt(file_type, f"the {file_type.value} parser could not read it ({type(exc).__name__})") from exc
