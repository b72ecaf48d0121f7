"""Tables set by whitespace or leader dots, from the words' positions on the page.

Words are grouped into visual lines by their vertical position, a line is cut into cells at wide
horizontal gaps and at leader dots (``Driving under the influence .......... 87,232 58,068``), and
a run of at least three such lines whose cells line up in columns is a table. Cells are assigned to
the columns found on the data rows, so a short row keeps its numbers under the right headers and a
row label stays with its own numbers (they share a baseline). ``table_finder`` runs this finder on
the words no ruled table took.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from services.rag.ingest.parsers.cleaning import collapse_cell
from services.rag.ingest.parsers.pdf.table_types import PdfTable, Word
from services.rag.ingest.parsers.reflow import BULLET_GLYPHS

_LEADER_WORD = re.compile(r"^(?:[.·…_]\s?){2,}$")
_TRAILING_LEADER = re.compile(r"(?:\s?[.·…_]){3,}$")
_LEADING_LEADER = re.compile(r"^(?:[.·…_]\s?){3,}")
_RULE_GLYPHS = frozenset("|│┃¦")
_INNER_LEADER = re.compile(r"((?:[.·…_]\s?){3,})")
_NUMERIC = re.compile(
    r"^[(\[]?[-+−–$€£¥]?\d[\d.,:/%\u2009 ]*[)\]%*†‡]?$"  # 87,232  (12.5)  $1.99  45%
    r"|^[-–—]$|^\(?[NXZ]\)?$|^n/?a$",  # the marks of an empty or withheld cell
    re.I,
)
_MIN_ROWS = 3
_MAX_CELL_CHARS = 60
_MAX_MEAN_CELL_CHARS = 28
_GAP_EM = 0.9
"""A horizontal gap at least this many font heights wide separates two cells."""
_MAX_LABEL_CHARS = 12
"""Two columns of words are a table (a glossary) when the first one holds short labels."""
_PROSE_CELL_CHARS = 30
_MIN_FILL = 0.6
"""Share of a table's data cells that hold text; text boxes of a diagram leave most cells empty."""
_MARKERS = frozenset("+-–•*·o>")
_LINE_GAP_EM = 2.2
"""A vertical gap wider than this many line heights ends a table."""


@dataclass
class _Cell:
    x0: float
    x1: float
    text: str


@dataclass
class _Line:
    words: list[Word]
    cells: list[_Cell]
    leader: bool

    @property
    def top(self) -> float:
        return min(w.top for w in self.words)

    @property
    def bottom(self) -> float:
        return max(w.bottom for w in self.words)

    @property
    def height(self) -> float:
        return statistics.median(w.height for w in self.words)

    @property
    def x0(self) -> float:
        return min(w.x0 for w in self.words)

    @property
    def x1(self) -> float:
        return max(w.x1 for w in self.words)


def clean_cell(value: object) -> str:
    text = BULLET_GLYPHS.sub("• ", collapse_cell(value)) if value is not None else ""
    return _TRAILING_LEADER.sub("", text).strip()


def visual_lines(words: Sequence[Word], centred: bool = False) -> list[_Line]:
    """Words grouped into visual lines, left to right, top to bottom: by their tops (PDF boxes, all
    a font's height), or by their vertical centres (``centred``: tight OCR boxes of "mean" and
    "(std)" differ in top and bottom, not in centre)."""

    def y(w: Word) -> float:
        return (w.top + w.bottom) / 2 if centred else w.top

    ordered = sorted(words, key=lambda w: (y(w), w.x0))
    groups: list[list[Word]] = []
    for word in ordered:
        if groups:
            last = groups[-1]
            ref = statistics.median(y(w) for w in last)
            if abs(y(word) - ref) <= 0.45 * min(word.height, last[0].height):
                last.append(word)
                continue
        groups.append([word])
    return [_split(sorted(group, key=lambda w: w.x0)) for group in groups]


def _split(words: list[Word]) -> _Line:
    """Cells of one visual line: cut at gaps of about a font height and at leader dots."""
    cells: list[_Cell] = []
    current: list[Word] = []
    leader = False
    height = statistics.median(w.height for w in words)

    def close() -> None:
        if current:
            text = " ".join(w.text for w in current)
            cells.append(_Cell(current[0].x0, current[-1].x1, text))
            current.clear()

    for word in _leader_split(words):
        text = word.text
        if text in _RULE_GLYPHS:  # a column rule drawn as text, or read as a pipe by OCR
            close()
            continue
        if _LEADER_WORD.match(text):
            leader = True
            close()
            continue
        stripped = _LEADING_LEADER.sub("", text)
        if stripped != text:
            leader = True
            close()
            word = Word(word.x1 - max(len(stripped), 1) * 0.5 * height, word.x1, word.top, word.bottom, stripped)
            text = stripped
        if current and word.x0 - current[-1].x1 >= _GAP_EM * height:
            close()
        elif current and leader and _NUMERIC.match(text) and _NUMERIC.match(current[-1].text):
            close()  # after a leader, numbers separated by one space are still separate cells
        trailing = _TRAILING_LEADER.search(text)
        if trailing:
            leader = True
            head = text[: trailing.start()].strip()
            if head:
                current.append(Word(word.x0, word.x1, word.top, word.bottom, head))
            close()
            continue
        current.append(word)
    close()
    if len(cells) >= 2 and cells[0].text in _MARKERS:  # a bullet or UML visibility mark, not a column
        cells[:2] = [_Cell(cells[0].x0, cells[1].x1, f"{cells[0].text} {cells[1].text}")]
    return _Line(list(words), cells, leader)


def _leader_split(words: list[Word]) -> list[Word]:
    """Words with leader dots inside (``OVERVIEW.........6``) cut into the label, the dots and the rest."""
    out: list[Word] = []
    for word in words:
        pieces = [p for p in _INNER_LEADER.split(word.text) if p]
        if len(pieces) < 2:
            out.append(word)
            continue
        step = (word.x1 - word.x0) / max(len(word.text), 1)
        at = 0
        for piece in pieces:
            start = word.text.index(piece, at)
            at = start + len(piece)
            out.append(Word(word.x0 + start * step, word.x0 + at * step, word.top, word.bottom, piece))
    return out


def _row_like(line: _Line) -> bool:
    return len(line.cells) >= 2 and all(len(c.text) <= _MAX_CELL_CHARS for c in line.cells)


def aligned_tables(words: Sequence[Word], centred: bool) -> list[PdfTable]:
    lines = visual_lines(words, centred)
    tables: list[PdfTable] = []
    run: list[_Line] = []

    def close() -> None:
        table = _table(run)
        if table is not None:
            tables.append(table)
        run.clear()

    for index, line in enumerate(lines):
        if run:
            gap = line.top - run[-1].bottom
            if gap > _LINE_GAP_EM * max(run[-1].height, line.height):
                close()
        if _row_like(line):
            run.append(line)
            continue
        # A one-cell line inside a table: a wrapped row label or a group heading, kept as a row
        # when a table row follows it.
        nxt = lines[index + 1] if index + 1 < len(lines) else None
        if run and len(line.cells) == 1 and nxt is not None and _row_like(nxt) and len(line.cells[0].text) <= 40:
            run.append(line)
            continue
        close()
    close()
    return tables


def _is_number(text: str) -> bool:
    return bool(_NUMERIC.match(text.strip()))


def _table(lines: list[_Line]) -> PdfTable | None:
    while lines and not _row_like(lines[-1]):
        lines = lines[:-1]
    if len(lines) < _MIN_ROWS:
        return None
    body = lines[1:]
    columns = _columns([line for line in body if _row_like(line)])
    if len(columns) < 2:
        return None
    cells = [c for line in lines for c in line.cells]
    if statistics.mean(len(c.text) for c in cells) > _MAX_MEAN_CELL_CHARS:
        return None
    numeric_rows = sum(1 for line in body if any(_is_number(c.text) for c in line.cells))
    leader_rows = sum(1 for line in body if line.leader)
    labels = [line.cells[0].text for line in body if line.cells]
    short_labels = bool(labels) and statistics.mean(len(t) for t in labels) <= _MAX_LABEL_CHARS
    if len(columns) < 3 and numeric_rows < 0.5 * len(body) and leader_rows < 0.5 * len(body) and not short_labels:
        return None
    rows = [_place(line, columns) for line in lines]
    rows = _join_wrapped_labels(rows)
    width = len(columns)
    if any(len(row) != width for row in rows):
        return None
    data = [cell for row in rows[1:] for cell in row]
    if sum(1 for cell in data if cell) < _MIN_FILL * len(data):
        return None
    if sum(1 for col in zip(*rows[1:], strict=True) if _prose_column(col)) >= 2:
        return None  # columns of running text side by side
    bbox = (min(line.x0 for line in lines), lines[0].top, max(line.x1 for line in lines), lines[-1].bottom)
    return PdfTable(bbox, tuple(tuple(row) for row in rows))


def _prose_column(cells: Sequence[str]) -> bool:
    filled = [c for c in cells if c]
    return bool(filled) and statistics.median(len(c) for c in filled) > _PROSE_CELL_CHARS


def _columns(lines: list[_Line]) -> list[tuple[float, float]]:
    """Column extents: the horizontal spans of the data cells, overlapping spans merged."""
    spans = sorted((c.x0, c.x1) for line in lines for c in line.cells)
    columns: list[list[float]] = []
    for x0, x1 in spans:
        if columns and x0 < columns[-1][1] - 0.5:
            columns[-1][1] = max(columns[-1][1], x1)
        else:
            columns.append([x0, x1])
    return [(a, b) for a, b in columns]


def _place(line: _Line, columns: list[tuple[float, float]]) -> list[str]:
    row = [""] * len(columns)
    for cell in _unspanned(line, columns):
        best, best_overlap = 0, -1e9
        for index, (x0, x1) in enumerate(columns):
            overlap = min(x1, cell.x1) - max(x0, cell.x0)
            if overlap <= 0:
                overlap = -min(abs(cell.x0 - x1), abs(x0 - cell.x1))
            if overlap > best_overlap:
                best, best_overlap = index, overlap
        row[best] = f"{row[best]} {cell.text}".strip()
    return row


def _unspanned(line: _Line, columns: list[tuple[float, float]]) -> list[_Cell]:
    """The line's cells, a cell that reaches over two columns (header words set close together)
    cut back into its words, so each word lands in its own column."""
    cells: list[_Cell] = []
    for cell in line.cells:
        spanned = sum(1 for x0, x1 in columns if min(x1, cell.x1) - max(x0, cell.x0) > 0.5)
        words = [w for w in line.words if cell.x0 - 0.5 <= w.x0 and w.x1 <= cell.x1 + 0.5]
        if spanned < 2 or len(words) < 2:
            cells.append(cell)
            continue
        cells.extend(_Cell(w.x0, w.x1, w.text) for w in words)
    return cells


def _join_wrapped_labels(rows: list[list[str]]) -> list[list[str]]:
    """A row with only a label followed by a row whose label starts in lower case: one label."""
    out: list[list[str]] = []
    pending: list[str] | None = None
    for row in rows:
        only_label = bool(row[0]) and not any(row[1:])
        if pending is not None:
            if row[0][:1].islower():
                row = [f"{pending[0]} {row[0]}", *row[1:]]
            else:
                out.append(pending)
            pending = None
        if only_label and out:
            pending = row
            continue
        out.append(row)
    if pending is not None:
        out.append(pending)
    return out
