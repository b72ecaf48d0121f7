"""A PDF page's text layer as sections: prose re-joined into paragraphs, tables as rows of cells.

PDFium reads the page (fast, and in column order on multi-column pages). A page that may hold a
table (rows of numbers, leader dots, a "Table 3" caption, wide gaps between words on several
lines, or drawn lines) is searched for tables (``table_finder``) with the words built from
PDFium's character boxes and the rules from its path objects. The characters inside a table's
box are taken out of the page's text, and the table is rendered with the shared table
convention (``cell | cell`` lines, blocks repeating the header row, row numbers kept) at the
place of its first character, so the prose around it keeps its reading order.
"""

from __future__ import annotations

import ctypes
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from services.rag.documents import Section
from services.rag.ingest.parsers.cleaning import clean_text
from services.rag.ingest.parsers.limits import ParseLimits
from services.rag.ingest.parsers.pdf.table_finder import PdfTable, Rule, Word, find_tables
from services.rag.ingest.parsers.reflow import BULLET_GLYPHS, reflow
from services.rag.ingest.parsers.tables import table_blocks

_log = logging.getLogger(__name__)

_LEADERS = re.compile(r"(?:\.\s?){4,}\s*[\d(]")
_CAPTION = re.compile(r"^\s*(?:Table|TABLE|Tableau)\s+[\dIVXA-Z]+", re.M)
_NUMBER = re.compile(r"(?<![\w.])[-(]?\$?\d[\d,.]*%?\)?(?![\w])")
_MIN_NUMERIC_LINES = 3
_MIN_RULES = 4
_MAX_PATHS = 20_000
_MAX_SEGMENTS = 2_000
_MIN_GAPPED_LINES = 3
_MAX_TABLE_PAGE_CHARS = 60_000
_MAX_CAPTION_CHARS = 160

Box = tuple[float, float, float, float]
_NO_BOX: Box = (0.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True)
class PageLayer:
    """What PDFium read on a page: its cleaned text, and for a page that may hold a table, every
    character of ``raw`` with its box (left, top, right, bottom; top-left origin, points)."""

    text: str
    raw: str = ""
    boxes: tuple[Box, ...] = ()
    rules: tuple[Rule, ...] = ()

    @property
    def candidate(self) -> bool:
        return bool(self.boxes)


def read_layer(page: pdfium.PdfPage, textpage: pdfium.PdfTextPage, with_boxes: bool = True) -> PageLayer:
    """Reads a page's text; the caller holds the PDFium lock. ``with_boxes``: look for tables."""
    text = clean_text(textpage.get_text_bounded())
    if not with_boxes:
        return PageLayer(text)
    try:
        return _with_geometry(page, textpage, text)
    except Exception as exc:  # noqa: BLE001 - geometry is an extra: a page PDFium half-reads keeps its text
        _log.warning("page geometry unreadable (%s); its text is kept as read", exc)
        return PageLayer(text)


def _with_geometry(page: pdfium.PdfPage, textpage: pdfium.PdfTextPage, text: str) -> PageLayer:
    count = textpage.count_chars()
    if not text.strip() or count > _MAX_TABLE_PAGE_CHARS or page.get_rotation():
        # A page shown turned (/Rotate) keeps its text as read: its boxes are in the unturned frame.
        return PageLayer(text)
    raw = textpage.get_text_range(0, count)
    if len(raw) != count:
        return PageLayer(text)
    left, _, _, top = page.get_mediabox()
    boxes = []
    for index in range(count):
        if pdfium_c.FPDFText_GetCharAngle(textpage.raw, index) > 0.01:
            boxes.append(_NO_BOX)  # rotated text (a margin stamp, an axis label) is not part of a row
            continue
        x0, b, r, t = textpage.get_charbox(index, loose=True)
        boxes.append((x0 - left, top - t, r - left, top - b))
    rules = _rules(page, left, top)
    if not _may_hold_table(text, rules, boxes):
        return PageLayer(text)
    return PageLayer(text, raw, tuple(boxes), tuple(rules))


def _rules(page: pdfium.PdfPage, left: float, top: float) -> list[Rule]:
    """The straight horizontal and vertical segments of the page's top-level paths (lines and
    rectangle sides), in top-left coordinates."""
    rules: list[Rule] = []
    x, y = ctypes.c_float(), ctypes.c_float()
    for count, obj in enumerate(page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_PATH,), max_depth=1)):
        if count >= _MAX_PATHS:
            break
        matrix = obj.get_matrix()
        points: list[tuple[float, float]] = []
        start: tuple[float, float] | None = None
        for index in range(min(pdfium_c.FPDFPath_CountSegments(obj.raw), _MAX_SEGMENTS)):
            segment = pdfium_c.FPDFPath_GetPathSegment(obj.raw, index)
            if not pdfium_c.FPDFPathSegment_GetPoint(segment, ctypes.byref(x), ctypes.byref(y)):
                continue
            px, py = matrix.on_point(x.value, y.value)
            point = (px - left, top - py)
            kind = pdfium_c.FPDFPathSegment_GetType(segment)
            if kind == pdfium_c.FPDF_SEGMENT_MOVETO or not points:
                start = point
            elif kind == pdfium_c.FPDF_SEGMENT_LINETO:
                _add_rule(rules, points[-1], point)
            points.append(point)
            if pdfium_c.FPDFPathSegment_GetClose(segment) and start is not None:
                _add_rule(rules, point, start)
    return rules


def _add_rule(rules: list[Rule], a: tuple[float, float], b: tuple[float, float]) -> None:
    (x0, y0), (x1, y1) = a, b
    if abs(y0 - y1) <= 1.0 and abs(x1 - x0) >= 3 or abs(x0 - x1) <= 1.0 and abs(y1 - y0) >= 3:
        rules.append(Rule(min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)))


def _may_hold_table(text: str, rules: Sequence[Rule], boxes: Sequence[Box]) -> bool:
    if _LEADERS.search(text) or _CAPTION.search(text):
        return True
    numeric = sum(1 for line in text.splitlines() if len(_NUMBER.findall(line)) >= 2)
    return numeric >= _MIN_NUMERIC_LINES or len(rules) >= _MIN_RULES or _gapped_lines(boxes) >= _MIN_GAPPED_LINES


def _gapped_lines(boxes: Sequence[Box]) -> int:
    """Printed lines with a gap between two words wider than a capital letter is tall: columns."""
    lines = 0
    previous: Box | None = None
    gapped = False
    for box in boxes:
        left, top, right, bottom = box
        height = bottom - top
        if right - left <= 0.01 and height <= 0.01:
            continue  # generated by PDFium: a space or a line break
        if previous is not None:
            p_left, p_top, p_right, p_bottom = previous
            tall = max(height, p_bottom - p_top, 1.0)
            if abs(bottom - p_bottom) > 0.6 * tall or left < p_left:  # a new line
                lines += gapped
                gapped = False
            elif left - p_right >= tall:
                gapped = True
        previous = box
    return lines + gapped


def lay_out_pages(layers: Sequence[PageLayer | None], limits: ParseLimits) -> dict[int, list[Section]]:
    """The sections of every page that has a layer (None: a scan, handled by OCR), by page index."""
    out: dict[int, list[Section]] = {}
    for index, layer in enumerate(layers):
        if layer is None:
            continue
        tables = _tables(layer, index) if layer.candidate else []
        out[index] = _page_sections(layer, tables, index + 1, limits) if tables else _prose(layer.text, index + 1)
    return out


def _tables(layer: PageLayer, index: int) -> list[PdfTable]:
    try:
        return find_tables(words(layer.raw, layer.boxes), layer.rules)
    except Exception as exc:  # noqa: BLE001 - tables are an extra: a page the finder cannot read keeps its text
        _log.warning("table detection failed on page %d (%s); its text is kept as read", index + 1, exc)
        return []


def words(raw: str, boxes: Sequence[Box]) -> list[Word]:
    """Words from characters: runs of visible characters on one baseline, without a gap."""
    out: list[Word] = []
    current: list[int] = []

    def close() -> None:
        if current:
            text = clean_text("".join(raw[i] for i in current)).strip()
            if text:
                bs = [boxes[i] for i in current]
                out.append(Word(min(b[0] for b in bs), max(b[2] for b in bs), min(b[1] for b in bs),
                                max(b[3] for b in bs), BULLET_GLYPHS.sub("•", text)))
            current.clear()

    for index, char in enumerate(raw):
        left, top, right, bottom = boxes[index]
        if char.isspace() or (right - left <= 0.01 and bottom - top <= 0.01):
            close()
            continue
        if current:
            p_left, p_top, p_right, p_bottom = boxes[current[-1]]
            height = max(bottom - top, p_bottom - p_top, 1.0)
            if abs(bottom - p_bottom) > 0.4 * height or left - p_right > 0.5 * height or left < p_left - 0.5:
                close()
        current.append(index)
    close()
    return out


def _prose(text: str, page: int) -> list[Section]:
    flowed = reflow(text).strip()
    return [Section(text=flowed, page=page)] if flowed else []


def _page_sections(layer: PageLayer, tables: list[PdfTable], page: int, limits: ParseLimits) -> list[Section]:
    """The page's prose and tables in reading order; a table goes where its first character was,
    under the heading of the line just before it (its caption or title), if that line is short."""
    owner = _owners(layer.boxes, tables)
    sections: list[Section] = []
    pending: list[str] = []
    placed: set[int] = set()
    caption = ""

    def flush_prose() -> None:
        nonlocal caption
        if pending:
            prose = _prose(clean_text("".join(pending)), page)
            sections.extend(prose)
            pending.clear()
            if prose:
                last = prose[-1].text.rsplit("\n", 1)[-1].strip()
                caption = last if len(last) <= _MAX_CAPTION_CHARS else ""

    for char, table in zip(layer.raw, owner, strict=True):
        if table < 0:
            pending.append(char)
            continue
        if table in placed:
            continue
        placed.add(table)
        flush_prose()
        sections.extend(_table_sections(tables[table], page, limits, caption))
    flush_prose()
    for number, unseen in enumerate(tables):  # a table PDFium did not see (text drawn as paths?)
        if number not in placed:
            sections.extend(_table_sections(unseen, page, limits, ""))
    return sections


def _table_sections(table: PdfTable, page: int, limits: ParseLimits, caption: str) -> list[Section]:
    header = (1, list(table.rows[0]))
    rows = ((number, list(cells)) for number, cells in enumerate(table.rows[1:], start=2))
    return table_blocks(header, rows, limits.table_block_chars, page=page, heading_path=(caption,) if caption else ())


def _owners(boxes: Sequence[Box], tables: list[PdfTable]) -> list[int]:
    """For every character, the index of the table whose box holds it, or -1. Characters PDFium
    generated (spaces, line breaks: boxes of no area) go with the characters around them."""
    owner = [-1] * len(boxes)
    real = [False] * len(boxes)
    for index, (left, top, right, bottom) in enumerate(boxes):
        if right - left <= 0.01 and bottom - top <= 0.01:
            continue
        real[index] = True
        # The glyph's bottom (about its baseline): glyph centres of one line differ with their
        # heights, so a line touching the table's edge would lose every other letter.
        cx = (left + right) / 2
        for number, table in enumerate(tables):
            x0, t0, x1, b0 = table.bbox
            if x0 - 1 <= cx <= x1 + 1 and t0 <= bottom <= b0 + 1.5:
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
