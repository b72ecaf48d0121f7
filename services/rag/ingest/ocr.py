"""Reading text from page images: scanned PDF pages and image uploads, with Tesseract.

Tesseract is a system binary (Debian: ``tesseract-ocr`` plus one ``tesseract-ocr-LANG`` per
language), run as a child process per page, not a Python wheel: ``make setup`` installs it where
it can, and a machine without it still ingests every document that has a text layer. A scan
that needs OCR then fails with FAILED_PRECONDITION naming what to install, rather than being
stored as an empty document.
"""

from __future__ import annotations

import functools
import io
import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Protocol

from PIL import Image

from services.runtime import domain_metrics, tracing
from services.runtime.errors import DeadlineExceeded, FailedPrecondition, InvalidArgument

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
    """Pages read by OCR in one document; a scan with more is refused (INVALID_ARGUMENT)."""
    page_timeout_s: float = 60.0
    tesseract_cmd: str = "tesseract"
    detect_orientation: bool = True
    """Turn pages scanned sideways or upside down before reading them (Tesseract's --psm 1)."""
    workers: int = 2
    """Pages of one document read at the same time (one Tesseract process and one core each)."""


OcrProgress = Callable[[int, int], None]
"""Called with (pages read, pages to read)."""


class PageReader(Protocol):
    """Reads the text of one page image; ``dpi`` is its resolution, 0 when unknown."""

    @property
    def max_pages(self) -> int: ...

    @property
    def dpi(self) -> int:
        """Resolution at which PDF pages are rendered for it."""
        ...

    @property
    def workers(self) -> int:
        """Pages it may read at the same time."""
        ...

    def read(self, image: Image.Image, page: int, dpi: int) -> str: ...


Page = tuple[int, Image.Image, int]
"""(page number, image, resolution in dpi or 0 when unknown)."""


def read_pages(ocr: PageReader, pages: Iterator[Page], total: int, on_page: OcrProgress | None) -> dict[int, str]:
    """The text of each page, by page number (an ``ocr`` span and the OCR pages metric)."""
    with tracing.stage("ingest.ocr", **{"docuthinker.pages": total}):
        texts = _read_pages(ocr, pages, total, on_page)
    domain_metrics.OCR_PAGES.inc(len(texts))
    return texts


def _read_pages(ocr: PageReader, pages: Iterator[Page], total: int, on_page: OcrProgress | None) -> dict[int, str]:
    """The text of each page, by page number, ``ocr.workers`` pages at a time.

    ``pages`` makes each image only when asked (a PDF renders it then), so at most ``workers``
    images are held at once. The first failure is raised once the pages being read have finished;
    pages not yet started are dropped.
    """
    texts: dict[int, str] = {}
    if on_page is not None:
        on_page(0, total)

    def collect(done: set[Future[str]]) -> None:
        for future in done:
            texts[pending.pop(future)] = future.result()
            if on_page is not None:
                on_page(len(texts), total)

    workers = max(1, ocr.workers)
    pending: dict[Future[str], int] = {}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ocr") as pool:
        try:
            for number, image, dpi in pages:
                if len(pending) >= workers:
                    collect(wait(pending, return_when=FIRST_COMPLETED).done)
                pending[pool.submit(ocr.read, image, number, dpi)] = number
            while pending:
                collect(wait(pending, return_when=FIRST_COMPLETED).done)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return texts


def unavailable(why: str) -> FailedPrecondition:
    return FailedPrecondition(
        f"the document has pages without a text layer (a scan?) and OCR is unavailable: {why}",
        reason="OCR_UNAVAILABLE",
        metadata={"setting": "DOCUTHINKER_RAG_OCR_ENABLED"},
    )


def too_many_pages(pages: int, limit: int) -> InvalidArgument:
    return InvalidArgument(
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

    @property
    def workers(self) -> int:
        return self._config.workers

    @functools.cached_property
    def missing(self) -> str | None:
        """Why Tesseract cannot run here (binary or a language missing), or None when it can."""
        if shutil.which(self._cmd) is None:
            return f"the {self._config.tesseract_cmd!r} binary is not installed; {INSTALL_HINT}"
        try:
            listing = _tesseract(self._cmd, ["--list-langs"], b"", timeout_s=30)
        except (OSError, subprocess.SubprocessError, OcrFailed) as exc:
            return f"{self._cmd} does not run: {exc}"
        installed = {line.strip() for line in listing.splitlines()[1:] if line.strip()}
        absent = [lang for lang in self._config.languages.split("+") if lang not in installed]
        if absent:
            return f"Tesseract has no data for {', '.join(absent)} (installed: {', '.join(sorted(installed))})"
        return None

    def read(self, image: Image.Image, page: int, dpi: int) -> str:
        if self.missing is not None:
            raise unavailable(self.missing)
        png = io.BytesIO()
        image.save(png, "PNG")
        # --psm 1 also detects the page's orientation: a page turned by 90 or 180 degrees reads as
        # gibberish under --psm 3, for about 30% more time per page.
        psm = "1" if self._config.detect_orientation else "3"
        args = ["stdin", "stdout", "-l", self._config.languages, "--psm", psm, *(["--dpi", str(dpi)] if dpi else [])]
        try:
            # TSV: the words with their boxes, so a scanned table comes out as rows of cells.
            from services.rag.ingest.ocr_layout import text_from_tsv  # it uses the parsers, which use this module

            tsv = _tesseract(self._cmd, [*args, "tsv"], png.getvalue(), timeout_s=self._config.page_timeout_s)
            return text_from_tsv(tsv)
        except subprocess.TimeoutExpired as exc:
            raise DeadlineExceeded(
                f"OCR of page {page} took longer than {self._config.page_timeout_s:g} s",
                reason="OCR_TIMEOUT",
                metadata={"page": str(page), "setting": "DOCUTHINKER_RAG_OCR_PAGE_TIMEOUT_S"},
            ) from exc


class OcrFailed(RuntimeError):
    """Tesseract exited with an error (an image it cannot read)."""


# Tesseract parallelises one page with OpenMP: on 2 cores that took 2.1-2.7 s a page instead of
# 0.9 s with one thread, and 7 s when the cores were busy. The limit goes to the child only, since
# in this process it would also cap torch and FAISS. (pytesseract cannot set a child's environment,
# hence the direct call.)
_ENV = {**os.environ, "OMP_THREAD_LIMIT": "1"}


def _tesseract(cmd: str, args: list[str], stdin: bytes, *, timeout_s: float) -> str:
    result = subprocess.run([cmd, *args], input=stdin, capture_output=True, timeout=timeout_s, env=_ENV, check=False)
    if result.returncode != 0:
        raise OcrFailed(result.stderr.decode(errors="replace").strip()[-500:] or f"exit status {result.returncode}")
    return result.stdout.decode(errors="replace")


def reader_from(config: OcrConfig) -> PageReader | None:
    """The configured reader; None when OCR is switched off."""
    if not config.enabled:
        return None
    reader = TesseractReader(config)
    if reader.missing is not None:
        log.warning("OCR is unavailable: %s; scans will be refused with OCR_UNAVAILABLE", reader.missing)
    return reader
