"""Tables inside chunk text, and the cell a question asks for: (row label, column header) -> cell.

Two shapes are read, both with exact offsets of every cell inside the chunk text:
- ``cell | cell | cell`` lines (the ingestion convention for every format with tables; a chunk
  of a table starts with its header line; Markdown's outer pipes and ``---|---`` rules are
  ignored);
- whitespace tables of extracted PDF text: a header line of words over lines ending in as many
  values (``Duster 360 14.3 8 360.0 ...`` under ``mpg cyl disp ...``); leader dots count as
  space. A row with fewer cells than its header has its value groups split apart ("800.73
  (484.11)" stays one value).

A block of rows without a header of its own borrows one of the same width from another table
of the same document. The lookup matches the question's terms against row labels (the row's
text cells) and column headers (words, abbreviations such as ``hp`` for horsepower, or MiniLM
similarity when no word matches), prefers a table whose title (the lines above its header, the
sheet name) the question names, and returns the cell with its row and column.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from services.rag.answers import lexical

_RULE = re.compile(r"^[\s|:+-]*-{2,}[\s|:+-]*$")
_LEADER = re.compile(r"(?:\s?\.){3,}\s?|…+")
_VALUE = re.compile(r"[-+]?[$£€]?\d[\d,]*(?:\.\d+)?%?(?:\s*\(\s*[-+]?[\d.,]+%?\s*\))?|N/?A|n/a|—|–")
_NUMERIC = re.compile(r"^[-+]?[$£€]?\d[\d,]*(?:\.\d+)?%?(?:\s*\([^)]*\))?$|^(?:N/?A|n/a|—|–|-)$")
_WORD_TOKEN = re.compile(r"\S+")
_YEAR = re.compile(r"^(?:19|20)\d{2}$")


@dataclass(frozen=True)
class Cell:
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Row:
    start: int
    end: int
    cells: tuple[Cell, ...]

    def texts(self) -> list[str]:
        return [c.text for c in self.cells]


@dataclass(frozen=True)
class Table:
    header: Row | None
    rows: tuple[Row, ...]
    title: str = ""
    width: int = 0
    borrowed: bool = False
    """The header came from another chunk of the same document (a chunk of rows without their header)."""


@dataclass(frozen=True)
class CellAnswer:
    table: Table
    row: Row
    column: int
    cell: Cell
    row_label: str
    column_header: str
    score: float


def is_numeric(text: str) -> bool:
    return bool(_NUMERIC.match(text.strip()))


WIDE_COLUMNS = 10
"""Rows this wide are cut across chunks (long CSV lines): a header of another width still aligns by its first columns."""


def _pipe_cells(text: str, start: int, end: int) -> tuple[Cell, ...]:
    line = text[start:end]
    stripped = line.strip()
    cut_outer = stripped.startswith("|") and stripped.endswith("|") and len(stripped) > 1
    pieces: list[tuple[int, int]] = []
    pos = 0
    for part in line.split("|"):
        pieces.append((pos, pos + len(part)))
        pos += len(part) + 1
    if cut_outer:
        pieces = pieces[1:-1]
    cells = []
    for a, b in pieces:
        raw = line[a:b]
        left = len(raw) - len(raw.lstrip())
        value = raw.strip()
        cells.append(Cell(start + a + left, start + a + left + len(value), value))
    return tuple(cells)


def _groups(text: str, base: int) -> list[Cell]:
    """Value groups of a cell holding several values ("64,058 800.73 (484.11) N/A")."""
    return [Cell(base + m.start(), base + m.end(), m.group(0)) for m in _VALUE.finditer(text)]


def _split_to_width(cells: tuple[Cell, ...], width: int) -> tuple[Cell, ...]:
    """A row with fewer cells than its header: its cells' value groups spread out, a label kept first."""
    if width <= len(cells):
        return cells
    out: list[Cell] = []
    for cell in cells:
        groups = _groups(cell.text, cell.start)
        first_value = groups[0].start - cell.start if groups else len(cell.text)
        label = cell.text[:first_value].strip()
        if not groups or (not out and label and len(groups) < 2 and not label[-1:].isdigit()):
            out.append(cell)
            continue
        if label:
            out.append(Cell(cell.start, cell.start + len(label), label))
        out.extend(groups)
    return tuple(out) if len(out) == width else cells


def _whitespace_cells(text: str, start: int, end: int, width: int) -> tuple[Cell, ...] | None:
    """The last ``width`` whitespace tokens of a line as cells, the rest as its label (None if it does not fit)."""
    line = _LEADER.sub(lambda m: " " * len(m.group(0)), text[start:end])
    tokens = [(m.start(), m.end()) for m in _WORD_TOKEN.finditer(line)]
    if len(tokens) < width:
        return None
    values = tokens[len(tokens) - width:]
    if sum(is_numeric(line[a:b]) for a, b in values) < max(1, width - 1 if width <= 3 else width - 2):
        return None
    cells = [Cell(start + a, start + b, text[start + a : start + b]) for a, b in values]
    if len(tokens) > width:
        a, b = tokens[0][0], tokens[len(tokens) - width - 1][1]
        cells.insert(0, Cell(start + a, start + b, text[start + a : start + b]))
    return tuple(cells)


def _lines(text: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        out.append((pos, pos + len(body)))
        pos += len(line)
    return out


def _title_above(text: str, lines: list[tuple[int, int]], index: int) -> str:
    """Short non-table lines just above a table's header (its caption or sheet title)."""
    parts: list[str] = []
    i = index - 1
    while i >= 0 and len(parts) < 2:
        line = text[lines[i][0] : lines[i][1]].strip()
        if not line:
            if parts:
                break
            i -= 1
            continue
        if "|" in line or len(line) > 120:
            break
        parts.insert(0, line)
        i -= 1
    return " ".join(parts)


def _pipe_tables(text: str, lines: list[tuple[int, int]]) -> list[Table]:
    tables: list[Table] = []
    i = 0
    while i < len(lines):
        a, b = lines[i]
        if "|" not in text[a:b] or _RULE.match(text[a:b]):
            i += 1
            continue
        title = _title_above(text, lines, i)
        block: list[tuple[int, int]] = []
        blank = 0
        while i < len(lines):
            a, b = lines[i]
            line = text[a:b]
            if not line.strip():
                blank += 1
                if blank > 1:
                    break
            elif "|" in line:
                blank = 0
                if not _RULE.match(line):
                    block.append((a, b))
            elif block and len(_groups(line, a)) >= 2 and len(line) < 200:
                block.append((a, b))  # an OCR'd row that lost its separators
                blank = 0
            else:
                break
            i += 1
        header = _pipe_cells(text, *block[0])
        width = len(header)
        rows = []
        for a, b in block[1:]:
            cells = _pipe_cells(text, a, b) if "|" in text[a:b] else (Cell(a, b, text[a:b].strip()),)
            cells = _split_to_width(cells, width)
            rows.append(Row(a, b, cells))
        head_row = Row(block[0][0], block[0][1], header)
        filled = [c.text for c in header if c.text]
        numeric = sum(is_numeric(t) and not _YEAR.match(t) for t in filled)
        # A first line of values (a label and numbers: a chunk of a long table without its header) is a row.
        if filled and (numeric == len(filled) or (numeric >= 2 and numeric * 2 >= len(filled))):
            tables.append(Table(None, (head_row, *rows), title, width))
        else:
            tables.append(Table(head_row, tuple(rows), title, width))
    return tables


def _whitespace_tables(text: str, lines: list[tuple[int, int]]) -> list[Table]:
    tables: list[Table] = []
    i = 0
    while i < len(lines):
        a, b = lines[i]
        line = text[a:b]
        if "|" in line:
            i += 1
            continue
        words = line.split()
        is_header = len(words) >= 3 and not any(is_numeric(w) for w in words) and len(line) < 200
        width = len(words)
        start_rows = i + 1 if is_header else i
        if is_header and start_rows < len(lines):
            # The header may name the label column too ("Offense Arrests Convictions"): count the values.
            following = _LEADER.sub(" ", text[lines[start_rows][0] : lines[start_rows][1]]).split()
            trailing = 0
            while trailing < len(following) and is_numeric(following[len(following) - 1 - trailing]):
                trailing += 1
            if trailing == width - 1 and len(following) > trailing:
                width = trailing
        if not is_header:
            # A headerless block: the width of its rows' trailing values.
            tokens = _LEADER.sub(" ", line).split()
            width = 0
            while width < len(tokens) and is_numeric(tokens[len(tokens) - 1 - width]):
                width += 1
            if width < 3:
                i += 1
                continue
        rows: list[Row] = []
        j = start_rows
        while j < len(lines):
            ra, rb = lines[j]
            cells = _whitespace_cells(text, ra, rb, width) if text[ra:rb].strip() else None
            if cells is None:
                break
            rows.append(Row(ra, rb, cells))
            j += 1
        if len(rows) >= 2:
            header = None
            if is_header:
                hcells = tuple(Cell(a + m.start(), a + m.end(), m.group(0)) for m in _WORD_TOKEN.finditer(line))
                header = Row(a, b, hcells)
            tables.append(Table(header, tuple(rows), _title_above(text, lines, i) if is_header else "", width))
            i = j
        else:
            i += 1
    return tables


def tables_in(text: str) -> list[Table]:
    """Every table of a chunk's text (pipe rows and whitespace-aligned rows)."""
    lines = _lines(text)
    return _pipe_tables(text, lines) + _whitespace_tables(text, lines)


def _header_like(row: Row) -> bool:
    filled = [c.text for c in row.cells if c.text]
    return len(filled) >= 2 and not any(is_numeric(t) for t in filled)


def _header_cells(table: Table, row: Row) -> list[str]:
    """Header texts aligned with a row's cells.

    The table's header when its width fits the row (a row with a label over a label-less header
    shifts it by one); else the nearest header-like row above (a sub-table's own header line).
    """
    head = table.header.texts() if table.header is not None else []
    if head and len(row.cells) == len(head):
        return head
    if head and len(row.cells) == len(head) + 1 and not row.cells[0].text == "":
        return ["", *head]
    above = [r for r in table.rows if r.start < row.start and len(r.cells) == len(row.cells) and _header_like(r)]
    if above:
        return above[-1].texts()
    if head and table.borrowed and len(row.cells) > len(head):
        return [*head, *[""] * (len(row.cells) - len(head))]  # a wide row cut across chunks: its first columns align
    return head if len(head) >= len(row.cells) - 1 else []


def _fuzzy_hits(needed: frozenset[str], have: frozenset[str]) -> frozenset[str]:
    hits = set()
    for n in needed:
        for h in have:
            if n == h or (min(len(n), len(h)) >= 4 and (n.startswith(h) or h.startswith(n))):
                hits.add(n)
                break
    return frozenset(hits)


def _abbreviates(short: str, word: str) -> bool:
    """``hp`` of horsepower, ``carb`` of carburetors: same first letter, letters in order, shorter."""
    short, word = short.lower(), word.lower()
    if not (2 <= len(short) <= 5) or len(word) <= len(short) or short[0] != word[0] or not short.isalpha():
        return False
    it = iter(word)
    return all(ch in it for ch in short)


def _column_score(header: str, question_words: Sequence[str], terms: frozenset[str]) -> float:
    header_terms = lexical.content_terms(header)
    if header_terms:
        hits = _fuzzy_hits(header_terms, terms)
        if hits:
            return len(hits) / len(header_terms)
    tokens = lexical.tokens(header)
    if len(tokens) == 1 and any(_abbreviates(tokens[0], w) for w in question_words):
        return 0.8
    return 0.0


_ROW_NUMBER = re.compile(r"\b(?:row|record|entry|observation|line)\s+(?:no\.?\s*|number\s+|#\s*)?(\d+)\b", re.I)
_PAGE = re.compile(r"\b(?:which|what)\s+page\b|\bpage\s+(?:number|no\.?)\b", re.I)


def lookup(question: str, tables: Sequence[tuple[int, Table, str]], similarity: Callable[[list[str]], np.ndarray]
           | None = None, min_row: float = 0.6) -> CellAnswer | None:
    """The cell at the question's (row, column) over ``(chunk index, table, context)`` triples, or None.

    ``context`` is the table's source (sheet name, headings); ``similarity(texts)`` gives the
    question's MiniLM cosine with each text (column headers no word of the question matches).
    """
    terms = lexical.content_terms(question)
    question_words = [w for w in lexical.tokens(question) if w not in lexical.stop_words()]
    row_number = _ROW_NUMBER.search(question)
    asks_page = bool(_PAGE.search(question))
    best: CellAnswer | None = None
    for _, table, context in tables:
        title_terms = lexical.content_terms(f"{table.title} {context}")
        for row in table.rows:
            heads = _header_cells(table, row)
            if (asks_page and len(row.cells) >= 2 and is_numeric(row.cells[-1].text)
                    and (not heads or is_numeric(heads[-1]))):
                # A table of contents: its rows end in the page number, under no header.
                heads = [""] * (len(row.cells) - 1) + ["page"]
            if not heads:
                continue
            # The row label: the row's text cell best named by the question.
            label_index, label_score, label_hits = -1, 0.0, frozenset[str]()
            for index, cell in enumerate(row.cells):
                cell_terms = lexical.content_terms(cell.text)
                if not cell_terms or is_numeric(cell.text):
                    continue
                hits = _fuzzy_hits(cell_terms, terms)
                score = len(hits) / len(cell_terms)
                if score > label_score:
                    label_index, label_score, label_hits = index, score, hits
            if row_number and row.cells and row.cells[0].text.strip().rstrip(".") == row_number.group(1):
                # "row 149": the row whose index cell is 149.
                label_index, label_score, label_hits = 0, 1.0, lexical.content_terms(row_number.group(0))
            title_hits = _fuzzy_hits(title_terms, terms - label_hits)
            if label_score < min_row:
                # A one-row table the question names by its title or column needs no row label.
                if len(table.rows) != 1:
                    continue
                label_index = next((i for i, c in enumerate(row.cells) if c.text and not is_numeric(c.text)), -1)
                label_score = 0.3 * bool(title_hits)
            label_text = row.cells[label_index].text if label_index >= 0 else ""
            rest = terms - label_hits - _fuzzy_hits(terms, lexical.content_terms(label_text))
            scores = [0.0 if i == label_index or i >= len(row.cells) or not row.cells[i].text else
                      _column_score(h, question_words, rest) for i, h in enumerate(heads)]
            column = int(np.argmax(scores)) if scores else -1
            col_score = scores[column] if scores else 0.0
            if col_score <= 0 and similarity is not None:
                usable = [i for i, h in enumerate(heads) if h and i != label_index and i < len(row.cells)
                          and row.cells[i].text]
                if usable:
                    cos = similarity([heads[i] for i in usable])
                    k = int(np.argmax(cos))
                    if cos[k] >= 0.25 and (len(cos) == 1 or cos[k] - np.partition(cos, -2)[-2] >= 0.05):
                        column, col_score = usable[k], 0.5 * float(cos[k])
            if col_score <= 0 or column < 0 or column >= len(row.cells) or (label_score < min_row and col_score < 0.5):
                continue
            title_bonus = 0.3 * len(title_hits) - 0.15 * len(title_terms - title_hits - lexical.content_terms(
                " ".join(heads)))
            score = label_score + col_score + title_bonus
            if best is None or score > best.score:
                best = CellAnswer(table, row, column, row.cells[column], label_text, heads[column], score)
    return best
