"""Where a cited span lies on its page, as rectangles the web app draws over the page.

The span is a slice of the page's extracted text (a citation's ``char_start:char_end``). Its words are
found among the page's own words, each with its box:

- a PDF page with a text layer: PDFium's character boxes, joined into words;
- a scanned PDF page (no text layer: the page rendered at the OCR resolution) or an image upload:
  Tesseract's word boxes (its TSV output), the same engine that produced the text.

Prose is matched as a word sequence (``difflib``, the longest run and what lies near it). A table row
("cell | cell" in the extracted text) is matched cell by cell on one line of the page: the row label's
occurrences anchor the candidates, and the anchor with the most cells found at its height wins. That
holds whatever order the page's words come in (OCR reads a scanned table column by column). The short
answer inside the span (a table cell, a number) is marked among the matched words.
Rectangles are fractions of the page's width and height from its top-left corner (the PDF's crop box,
what pdf.js draws; pages shown turned by /Rotate are not supported).
"""

from __future__ import annotations

import difflib
import io
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

CELL_SEPARATOR = " | "
_WORD_EDGE = re.compile(r"^\W+|\W+$")
_SCAN_CHARS = 20
"""A PDF page with fewer letters and digits than this in its text layer is read by OCR."""


@dataclass(frozen=True)
class PageWord:
    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    """Fractions of the page, top-left origin."""

    @property
    def key(self) -> str:
        return normalise(self.text)

    @property
    def middle(self) -> float:
        return (self.y0 + self.y1) / 2

    @property
    def height(self) -> float:
        return self.y1 - self.y0


@dataclass(frozen=True)
class Box:
    x0: float
    y0: float
    x1: float
    y1: float
    answer: bool = False


@dataclass(frozen=True)
class Located:
    source: str
    boxes: tuple[Box, ...]
    words_found: int
    words_total: int


def normalise(word: str) -> str:
    return _WORD_EDGE.sub("", word.casefold())


def span_words(text: str) -> list[str]:
    return [k for k in (normalise(w) for w in text.replace(CELL_SEPARATOR, " ").split()) if k]


class OcrWords:
    """Tesseract's words with their boxes, for one page image."""

    def __init__(self, command: str = "tesseract", languages: str = "eng", timeout_s: float = 60.0) -> None:
        self._command = shutil.which(command) or command
        self._languages = languages
        self._timeout_s = timeout_s

    @property
    def available(self) -> bool:
        return shutil.which(self._command) is not None

    def read(self, image: Image.Image, dpi: int = 0) -> list[PageWord]:
        png = io.BytesIO()
        image.save(png, "PNG")
        args = [self._command, "stdin", "stdout", "-l", self._languages, "--psm", "1",
                *(["--dpi", str(dpi)] if dpi else []), "tsv"]
        # One thread, as at ingestion (services/rag/ingest/ocr.py): OpenMP threads only slow it on few cores.
        result = subprocess.run(args, input=png.getvalue(), capture_output=True, timeout=self._timeout_s,
                                env={**os.environ, "OMP_THREAD_LIMIT": "1"}, check=False)
        if result.returncode != 0:
            raise RuntimeError(result.stderr.decode(errors="replace").strip()[-300:] or "tesseract failed")
        return words_from_tsv(result.stdout.decode(errors="replace"), image.width, image.height)


def words_from_tsv(tsv: str, width: int, height: int) -> list[PageWord]:
    words = []
    for line in tsv.splitlines()[1:]:
        fields = line.split("\t")
        if len(fields) < 12 or fields[0] != "5" or not fields[11].strip():
            continue
        try:
            left, top, w, h = (int(v) for v in fields[6:10])
        except ValueError:
            continue
        for part in fields[11].strip().split("|"):
            if part.strip():
                words.append(PageWord(part.strip(), left / width, top / height, (left + w) / width,
                                      (top + h) / height))
    return words


def pdf_words(page, textpage) -> list[PageWord]:
    """The words of a PDF page's text layer with PDFium's character boxes (the caller holds PDFium's lock)."""
    count = textpage.count_chars()
    raw = textpage.get_text_range(0, count) if count else ""
    left, bottom, right, top = page.get_cropbox()
    width, height = max(right - left, 1e-6), max(top - bottom, 1e-6)
    words: list[PageWord] = []
    current: list[tuple[str, float, float, float, float]] = []

    def flush() -> None:
        if current:
            text = "".join(c[0] for c in current)
            words.append(PageWord(text, min(c[1] for c in current), min(c[2] for c in current),
                                  max(c[3] for c in current), max(c[4] for c in current)))
            current.clear()

    for index in range(min(count, len(raw))):
        char = raw[index]
        if char.isspace() or char == "\x00":
            flush()
            continue
        x0, b, x1, t = textpage.get_charbox(index, loose=True)
        if x1 <= x0 or t <= b:
            continue
        box = ((x0 - left) / width, (top - t) / height, (x1 - left) / width, (top - b) / height)
        if current and box[0] - current[-1][3] > 0.6 * (box[3] - box[1]):
            flush()  # a wide gap: the next cell of a table row, without a space between them in the stream
        current.append((char, *box))
    flush()
    return words


def is_scanned(words: Sequence[PageWord]) -> bool:
    return sum(len(w.key) for w in words) < _SCAN_CHARS


# -- matching -------------------------------------------------------------------------------------------
def _runs(page: Sequence[str], wanted: Sequence[str]) -> list[tuple[int, int]]:
    """Every place ``wanted`` occurs in ``page`` as consecutive words: (first index, end)."""
    n = len(wanted)
    if not n:
        return []
    return [(i, i + n) for i in range(len(page) - n + 1) if list(page[i:i + n]) == list(wanted)]


def match_prose(words: Sequence[PageWord], wanted: Sequence[str]) -> list[int]:
    """Indexes of the page words that spell ``wanted``: the longest matching run, and the runs near it."""
    keys = [w.key for w in words]
    blocks = [b for b in difflib.SequenceMatcher(None, keys, list(wanted), autojunk=False).get_matching_blocks()
              if b.size]
    if not blocks:
        return []
    main = max(blocks, key=lambda b: b.size)
    reach = max(3, len(wanted))
    chosen: list[int] = []
    for block in blocks:
        # Near the main run on the page, and in the same relative place in the span.
        page_gap = min(abs(block.a - (main.a + main.size)), abs(main.a - (block.a + block.size)))
        if block is main or (page_gap <= reach and abs((block.a - main.a) - (block.b - main.b)) <= reach):
            chosen.extend(range(block.a, block.a + block.size))
    # Single-word matches far from the span's length are coincidences ("the", "8").
    if len(chosen) == 1 and len(wanted) > 3:
        return []
    return sorted(set(chosen))


def match_row(words: Sequence[PageWord], cells: Sequence[Sequence[str]]) -> list[list[int]]:
    """For each cell of a table row, the page words that spell it on one line (``[]`` where not found)."""
    keys = [w.key for w in words]
    occurrences = [_runs(keys, cell) for cell in cells]
    anchors = [(ci, run) for ci, runs in enumerate(occurrences) for run in runs if len(cells[ci])]
    best: list[list[int]] = [[] for _ in cells]
    best_score = 0
    for _, (a, b) in anchors:
        middle = sum(words[i].middle for i in range(a, b)) / (b - a)
        tolerance = max(words[a].height, 1e-3) * 0.7
        picked: list[list[int]] = []
        for runs in occurrences:
            on_line = [r for r in runs if abs(sum(words[i].middle for i in range(r[0], r[1])) / (r[1] - r[0])
                                              - middle) <= tolerance]
            picked.append(list(range(*min(on_line, key=lambda r: abs(r[0] - a)))) if on_line else [])
        score = sum(len(p) for p in picked)
        if score > best_score:
            best, best_score = picked, score
    return best


def locate(words: Sequence[PageWord], span: str, answer: str, source: str) -> Located:
    """The boxes of ``span`` (and of ``answer`` inside it) among ``words``."""
    total = len(span_words(span))
    if not words or not total:
        return Located("", (), 0, total)
    answer_keys = span_words(answer)
    if CELL_SEPARATOR in span:
        cells = [span_words(cell) for cell in span.split(CELL_SEPARATOR)]
        matched = match_row(words, cells)
        picked = sorted({i for cell in matched for i in cell})
        answer_idx = set()
        for cell_keys, cell_idx in zip(cells, matched, strict=True):
            if answer_keys and cell_idx and _runs(cell_keys, answer_keys):
                answer_idx = set(cell_idx)
                break
        groups = [c for c in matched if c]
    else:
        picked = match_prose(words, span_words(span))
        answer_idx = set()
        if answer_keys:
            keys = [words[i].key for i in picked]
            for start, end in _runs(keys, answer_keys):
                answer_idx = set(picked[start:end])
                break
        groups = _lines(words, picked)
    boxes = []
    for group in groups:
        plain = [i for i in group if i not in answer_idx]
        marked = [i for i in group if i in answer_idx]
        for part, is_answer in ((plain, False), (marked, True)):
            for line in _lines(words, part):
                boxes.append(_union(words, line, is_answer))
    boxes.sort(key=lambda b: (round(b.y0, 3), b.x0))  # reading order
    return Located(source if boxes else "", tuple(boxes), len(picked), total)


def _lines(words: Sequence[PageWord], picked: Sequence[int]) -> list[list[int]]:
    """Consecutive picked words on one line of the page, as groups."""
    lines: list[list[int]] = []
    for i in picked:
        if lines:
            last = words[lines[-1][-1]]
            word = words[i]
            same_line = abs(word.middle - last.middle) <= 0.6 * max(last.height, word.height, 1e-3)
            close = word.x0 - last.x1 <= 3 * max(last.height, word.height, 1e-3)
            if same_line and close and i == lines[-1][-1] + 1:
                lines[-1].append(i)
                continue
        lines.append([i])
    return lines


def _union(words: Sequence[PageWord], group: Sequence[int], answer: bool) -> Box:
    return Box(min(words[i].x0 for i in group), min(words[i].y0 for i in group), max(words[i].x1 for i in group),
               max(words[i].y1 for i in group), answer)


# -- documents --------------------------------------------------------------------------------------------
class SpanLocator:
    """Reads a stored original's page words (PDFium or Tesseract) and finds spans on them."""

    def __init__(self, ocr: OcrWords | None, ocr_dpi: int = 200, pdfium_lock: threading.Lock | None = None,
                 cache_pages: int = 16) -> None:
        self._ocr = ocr
        self._dpi = ocr_dpi
        self._lock = pdfium_lock or threading.Lock()
        self._cache: dict[tuple[str, int], tuple[str, list[PageWord]]] = {}
        self._cache_pages = cache_pages
        self._cache_lock = threading.Lock()

    def page_words(self, cache_key: str, data: bytes, file_type: str, page: int) -> tuple[str, list[PageWord]]:
        """(source, words) of one page; an OCR'd page is read once and kept (a few pages, most recent)."""
        key = (cache_key, page)
        with self._cache_lock:
            if key in self._cache:
                return self._cache[key]
        found = self._read(data, file_type, page)
        with self._cache_lock:
            self._cache[key] = found
            while len(self._cache) > self._cache_pages:
                self._cache.pop(next(iter(self._cache)))
        return found

    def _read(self, data: bytes, file_type: str, page: int) -> tuple[str, list[PageWord]]:
        if file_type == "image":
            if self._ocr is None or not self._ocr.available:
                return "", []
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                return "tesseract", self._ocr.read(image.convert("L"))
        if file_type != "pdf":
            return "", []
        import pypdfium2 as pdfium

        with self._lock:
            document = pdfium.PdfDocument(data)
            try:
                if not 1 <= page <= len(document):
                    return "", []
                pdf_page = document[page - 1]
                try:
                    textpage = pdf_page.get_textpage()
                    try:
                        words = pdf_words(pdf_page, textpage)
                    finally:
                        textpage.close()
                    if not is_scanned(words):
                        return "pdfium", words
                    if self._ocr is None or not self._ocr.available:
                        return "", []
                    image = pdf_page.render(scale=self._dpi / 72, grayscale=True).to_pil().copy()
                finally:
                    pdf_page.close()
            finally:
                document.close()
        return "tesseract", self._ocr.read(image, self._dpi)


def span_locator(settings) -> SpanLocator:
    """The locator of the rag service (``RagSettings``: its OCR engine, languages and resolution), sharing
    PDFium's lock with ingestion (PDFium is not thread-safe)."""
    from services.rag.ingest.parsers.pdf.document import _PDFIUM_LOCK

    ocr = OcrWords(settings.ocr_tesseract_cmd, settings.ocr_languages, settings.ocr_page_timeout_s) \
        if settings.ocr_enabled else None
    return SpanLocator(ocr, settings.ocr_dpi, _PDFIUM_LOCK)
