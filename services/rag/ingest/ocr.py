"""Reading text from page images: scanned PDF pages and image uploads, with Tesseract.

Tesseract is a system binary (Debian: ``tesseract-ocr`` plus one ``tesseract-ocr-LANG`` per
language), not a Python wheel: ``make setup`` installs it where it can, and a machine without it
still ingests every document that has a text layer. A scan that needs OCR then fails with
FAILED_PRECONDITION naming what to install, rather than being stored as an empty document.
"""

from __future__ import annotations

import functools
import logging
import shutil
from dataclasses import dataclass
from typing import Protocol

import pytesseract
from PIL import Image

from services.runtime.errors import DeadlineExceeded, FailedPrecondition, ResourceExhausted

log = logging.getLogger("docuthinker.rag.ocr")

INSTALL_HINT = "install Tesseract (Debian: apt-get install tesseract-ocr tesseract-ocr-eng)"


@dataclass(frozen=True)
class OcrConfig:
    enabled: bool = True
    languages: str = "eng"
    """Tesseract language codes joined by '+', e.g. "eng+deu"; each needs its traineddata."""
    dpi: int = 200
    """Resolution at which scanned PDF pages are rendered for OCR."""
    max_pages: int = 50
    """Pages read by OCR in one document; a scan with more is refused (RESOURCE_EXHAUSTED)."""
    page_timeout_s: float = 60.0
    tesseract_cmd: str = "tesseract"


class PageReader(Protocol):
    """Reads the text of one page image; ``dpi`` is its resolution, 0 when unknown."""

    @property
    def max_pages(self) -> int: ...

    @property
    def dpi(self) -> int:
        """Resolution at which PDF pages are rendered for it."""
        ...

    def read(self, image: Image.Image, page: int, dpi: int) -> str: ...


def unavailable(why: str) -> FailedPrecondition:
    return FailedPrecondition(
        f"the document has pages without a text layer (a scan?) and OCR is unavailable: {why}",
        reason="OCR_UNAVAILABLE",
        metadata={"setting": "DOCUTHINKER_RAG_OCR_ENABLED"},
    )


def too_many_pages(pages: int, limit: int) -> ResourceExhausted:
    return ResourceExhausted(
        f"the document has {pages} pages without a text layer; OCR reads at most {limit} per document",
        reason="TOO_MANY_OCR_PAGES",
        metadata={"limit": str(limit), "pages": str(pages), "setting": "DOCUTHINKER_RAG_OCR_MAX_PAGES"},
    )


class TesseractReader:
    def __init__(self, config: OcrConfig) -> None:
        self._config = config
        self._cmd = shutil.which(config.tesseract_cmd) or config.tesseract_cmd

    @property
    def max_pages(self) -> int:
        return self._config.max_pages

    @property
    def dpi(self) -> int:
        return self._config.dpi

    @functools.cached_property
    def missing(self) -> str | None:
        """Why Tesseract cannot run here (binary or a language missing), or None when it can."""
        if shutil.which(self._cmd) is None:
            return f"the {self._config.tesseract_cmd!r} binary is not installed; {INSTALL_HINT}"
        try:
            installed = set(_languages(self._cmd))
        except (OSError, pytesseract.TesseractError) as exc:
            return f"{self._cmd} does not run: {exc}"
        absent = [lang for lang in self._config.languages.split("+") if lang not in installed]
        if absent:
            return f"Tesseract has no data for {', '.join(absent)} (installed: {', '.join(sorted(installed))})"
        return None

    def read(self, image: Image.Image, page: int, dpi: int) -> str:
        if self.missing is not None:
            raise unavailable(self.missing)
        try:
            return _tesseract(self._cmd, image, self._config.languages, dpi, self._config.page_timeout_s)
        except RuntimeError as exc:  # pytesseract's timeout
            raise DeadlineExceeded(
                f"OCR of page {page} took longer than {self._config.page_timeout_s:g} s",
                reason="OCR_TIMEOUT",
                metadata={"page": str(page), "setting": "DOCUTHINKER_RAG_OCR_PAGE_TIMEOUT_S"},
            ) from exc


def _languages(cmd: str) -> list[str]:
    pytesseract.pytesseract.tesseract_cmd = cmd
    return pytesseract.get_languages()


def _tesseract(cmd: str, image: Image.Image, languages: str, dpi: int, timeout_s: float) -> str:
    # pytesseract keeps the binary's path in a module global; every reader of a process uses the
    # same configured binary, so setting it per call is safe.
    pytesseract.pytesseract.tesseract_cmd = cmd
    config = f"--psm 3 --dpi {dpi}" if dpi else "--psm 3"
    return pytesseract.image_to_string(image, lang=languages, config=config, timeout=timeout_s)


def reader_from(config: OcrConfig) -> PageReader | None:
    """The configured reader; None when OCR is switched off."""
    if not config.enabled:
        return None
    reader = TesseractReader(config)
    if reader.missing is not None:
        log.warning("OCR is unavailable: %s; scans will be refused with OCR_UNAVAILABLE", reader.missing)
    return reader
