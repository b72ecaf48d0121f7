"""A PDF page's text layer as sections: prose re-joined into paragraphs, tables as rows of cells.

PDFium reads the page (fast, and in column order on multi-column pages). A page that may hold a
table (rows of numbers, leader dots, a "Table 3" caption, or drawn lines) is also read by
pdfplumber, whose word geometry finds the tables (``pdf_tables``). The characters PDFium placed
inside a table's box are taken out of the page's text, and the table is rendered with the
shared table convention (``cell | cell`` lines, blocks repeating the header row, row numbers
kept) at the place of its first character, so the prose around it keeps its reading order.

pdfplumber is pure Python and about 10x slower than PDFium, so only candidate pages go through
it, and a page it cannot read keeps its PDFium text.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from services.rag.documents import Section
from services.rag.ingest.parsers.cleaning import clean_text
from services.rag.ingest.parsers.limits import ParseLimits
from services.rag.ingest.parsers.pdf_tables import PdfTable, find_tables
from services.rag.ingest.parsers.reflow import reflow
from services.rag.ingest.parsers.tables import table_blocks

_log = logging.getLogger(__name__)

_LEADERS = re.compile(r"(?:\.\s?){4,}\s*[\d(]")
_CAPTION = re.compile(r"^\s*(?:Table|TABLE|Tableau)\s+[\dIVXA-Z]+", re.M)
_NUMBER = re.compile(r"(?<![\w.])[-(]?\$?\d[\d,.]*%?\)?(?![\w])")
_MIN_NUMERIC_LINES = 3
_MIN_PATHS = 4
_MAX_TABLE_PAGE_CHARS = 60_000

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class PageLayer:
    """What PDFium read on a page: its cleaned text, and for a page that may hold a table, every
    character of ``raw`` with its box (left, top, right, bottom; top-left origin, points)."""

    text: str
    raw: str = ""
    boxes: tuple[Box, ...] = ()

    @property
    def candidate(self) -> bool:
        return bool(self.boxes)


def read_layer(page: pdfium.PdfPage, textpage: pdfium.PdfTextPage) -> PageLayer:
    """Reads a page's text; the caller holds the PDFium lock."""
    text = clean_text(textpage.get_text_bounded())
    if not _may_hold_table(text, page):
        return PageLayer(text)
    count = textpage.count_chars()
    if count > _MAX_TABLE_PAGE_CHARS:
        return PageLayer(text)
    raw = textpage.get_text_range(0, count)
    if len(raw) != count:
        return PageLayer(text)
    left, _, _, top = page.get_mediabox()
    boxes = []
    for index in range(count):
        l, b, r, t = textpage.get_charbox(index)
        boxes.append((l - left, top - t, r - left, top - b))
    return PageLayer(text, raw, tuple(boxes))


def _may_hold_table(text: str, page: pdfium.PdfPage) -> bool:
    if _LEADERS.search(text) or _CAPTION.search(text):
        return True
    numeric = sum(1 for line in text.splitlines() if len(_NUMBER.findall(line)) >= 2)
    if numeric >= _MIN_NUMERIC_LINES:
        return True
    paths = page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_PATH,), max_depth=2)
    return sum(1 for _, _ in zip(range(_MIN_PATHS), paths, strict=False)) >= _MIN_PATHS


def lay_out_pages(data: bytes, layers: Sequence[PageLayer | None], limits: ParseLimits) -> dict[int, list[Section]]:
    """The sections of every page that has a layer (None: a scan, handled by OCR), by page index."""
    out: dict[int, list[Section]] = {}
    plumber = None
    analysed = 0
    try:
        for index, layer in enumerate(layers):
            if layer is None:
                continue
            tables: list[PdfTable] = []
            if layer.candidate and analysed < limits.max_table_pages:
                analysed += 1
                if plumber is None:
                    plumber = _open_plumber(data)
                if plumber is not False:
                    tables = _tables(plumber, index)
            out[index] = _page_sections(layer, tables, index + 1, limits) if tables else _prose(layer.text, index + 1)
    finally:
        if plumber not in (None, False):
            plumber.close()
    return out


def _open_plumber(data: bytes):
    import pdfplumber  # imported on first use: it pulls in pdfminer

    try:
        return pdfplumber.open(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - pdfminer raises many types; PDFium already read the text
        _log.warning("pdfplumber cannot open this PDF (%s); tables are kept as text", exc)
        return False


def _tables(plumber, index: int) -> list[PdfTable]:
    try:
        page = plumber.pages[index]
        try:
            return find_tables(page)
        finally:
            page.close()
    except Exception as exc:  # noqa: BLE001 - a broken page keeps its PDFium text
        _log.warning("table detection failed on page %d (%s); its text is kept as read", index + 1, exc)
        return []


def _prose(text: str, page: int) -> list[Section]:
    flowed = reflow(text).strip()
    return [Section(text=flowed, page=page)] if flowed else []


def _page_sections(layer: PageLayer, tables: list[PdfTable], page: int, limits: ParseLimits) -> list[Section]:
    """The page's prose and tables in reading order; a table goes where its first character was."""
    owner = _owners(layer.boxes, tables)
    sections: list[Section] = []
    pending: list[str] = []
    placed: set[int] = set()

    def flush_prose() -> None:
        if pending:
            sections.extend(_prose(clean_text("".join(pending)), page))
            pending.clear()

    for char, table in zip(layer.raw, owner, strict=True):
        if table < 0:
            pending.append(char)
            continue
        if table in placed:
            continue
        placed.add(table)
        flush_prose()
        sections.extend(_table_sections(tables[table], page, limits))
    flush_prose()
    for number, table in enumerate(tables):  # a table PDFium did not see (text drawn as paths?)
        if number not in placed:
            sections.extend(_table_sections(table, page, limits))
    return sections


def _table_sections(table: PdfTable, page: int, limits: ParseLimits) -> list[Section]:
    header = (1, list(table.rows[0]))
    rows = ((number, list(cells)) for number, cells in enumerate(table.rows[1:], start=2))
    return table_blocks(header, rows, limits.table_block_chars, page=page)


def _owners(boxes: Sequence[Box], tables: list[PdfTable]) -> list[int]:
    """For every character, the index of the table whose box holds it, or -1. Characters PDFium
    generated (spaces, line breaks: boxes of no area) go with the characters around them."""
    owner = [-1] * len(boxes)
    real = [False] * len(boxes)
    for index, (left, top, right, bottom) in enumerate(boxes):
        if right - left <= 0.01 and bottom - top <= 0.01:
            continue
        real[index] = True
        cx, cy = (left + right) / 2, (top + bottom) / 2
        for number, table in enumerate(tables):
            x0, t0, x1, b0 = table.bbox
            if x0 - 1 <= cx <= x1 + 1 and t0 - 1 <= cy <= b0 + 1:
                owner[index] = number
                break
    previous = -1
    for index in range(len(boxes)):
        if real[index]:
            previous = owner[index]
            continue
        following = next((owner[j] for j in range(index + 1, min(index + 8, len(boxes))) if real[j]), -1)
        owner[index] = previous if previous == following else -1
    return owner
