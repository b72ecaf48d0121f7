"""Tables on a PDF page as rows of cells, from the page's word geometry.

The words and drawn lines come from PDFium (``layout``: character boxes and path segments),
so no second PDF parser reads the page. Two finders, run in this order:

* **Ruled tables**: pdfplumber's grid functions (``merge_edges``, ``edges_to_intersections``,
  ``intersections_to_cells``, ``cells_to_tables``) build the cells from the drawn lines and
  rectangles; each cell takes the words inside it. A table is kept only when no words sit just
  outside it on its own rows (a grid drawn around the numbers but not the row labels is left to
  the second finder, so a label is never cut from its row).
* **Aligned tables** (whitespace or leader dots; ``aligned_tables``): on the words no ruled
  table took, runs of at least three lines whose cells line up in columns.

The first row of a table is its header. Prose is never taken for a table: a table's cells are
short, most of them hold text, and it has three columns, numbers in most rows, or short labels
in its first column (two columns of running text are long cells in two columns).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from pdfplumber.table import cells_to_tables, edges_to_intersections, intersections_to_cells, merge_edges

from services.rag.ingest.parsers.pdf.aligned_tables import aligned_tables, clean_cell, visual_lines
from services.rag.ingest.parsers.pdf.table_types import PdfTable, Rule, Word

__all__ = ["PdfTable", "Rule", "Word", "find_tables"]


def find_tables(words: Sequence[Word], rules: Sequence[Rule] = (), *, centred: bool = False) -> list[PdfTable]:
    """The tables among a page's words and drawn lines, top to bottom (``centred``: words have tight
    boxes, as OCR's, and share a line by their vertical centres)."""
    words = [w for w in words if w.text.strip()]
    if not words:
        return []
    tables = _ruled_tables(words, rules) if rules else []
    rest = [w for w in words if not any(_inside(w, t.bbox) for t in tables)]
    tables.extend(aligned_tables(rest, centred))
    return sorted(tables, key=lambda t: (t.bbox[1], t.bbox[0]))


def _inside(word: Word, bbox: tuple[float, float, float, float], slack: float = 1.0) -> bool:
    x0, top, x1, bottom = bbox
    cx, cy = (word.x0 + word.x1) / 2, (word.top + word.bottom) / 2
    return x0 - slack <= cx <= x1 + slack and top - slack <= cy <= bottom + slack


_SNAP = 3.0
_MIN_EDGE = 3.0


def _ruled_tables(words: list[Word], rules: Sequence[Rule]) -> list[PdfTable]:
    edges = merge_edges([r.edge() for r in rules], _SNAP, _SNAP, _SNAP, _SNAP)
    edges = [e for e in edges if (e["width"] if e["orientation"] == "h" else e["height"]) >= _MIN_EDGE]
    if len(edges) < 4:
        return []
    cells = intersections_to_cells(edges_to_intersections(edges, _SNAP, _SNAP))
    tables: list[PdfTable] = []
    for group in cells_to_tables(cells):
        rows = _grid_rows(group, words)
        rows = [row for row in rows if any(row)]
        if len(rows) < 2 or len(rows[0]) < 2:
            continue
        bbox = (min(c[0] for c in group), min(c[1] for c in group), max(c[2] for c in group), max(c[3] for c in group))
        if _cut_off(bbox, words):
            continue
        tables.append(PdfTable(bbox, tuple(tuple(row) for row in rows)))
    return tables


def _grid_rows(cells: list[tuple[float, float, float, float]], words: list[Word]) -> list[list[str]]:
    """The text of a grid's cells, row by row; a merged cell's text goes in its first column."""
    tops = sorted({round(c[1], 1) for c in cells})
    lefts = sorted({round(c[0], 1) for c in cells})
    by_corner = {(round(c[1], 1), round(c[0], 1)): c for c in cells}
    x0s, t0s = min(lefts), min(tops)
    x1s, b1s = max(c[2] for c in cells), max(c[3] for c in cells)
    inside: dict[tuple[float, float], list[Word]] = {}
    for word in words:
        cx, cy = (word.x0 + word.x1) / 2, (word.top + word.bottom) / 2
        if not (x0s <= cx <= x1s and t0s <= cy <= b1s):
            continue
        row = bisect.bisect_right(tops, cy) - 1
        col = bisect.bisect_right(lefts, cx) - 1
        cell = None
        for r in range(row, -1, -1):  # a merged cell starts above or left of the point
            for c in range(col, -1, -1):
                found = by_corner.get((tops[r], lefts[c]))
                if found is not None and found[0] <= cx <= found[2] and found[1] <= cy <= found[3]:
                    cell = (tops[r], lefts[c])
                    break
            if cell is not None:
                break
        if cell is not None:
            inside.setdefault(cell, []).append(word)
    grid = [[""] * len(lefts) for _ in tops]
    for (top, left), members in inside.items():
        text = " ".join(w.text for line in visual_lines(members) for w in line.words)
        grid[tops.index(top)][lefts.index(left)] = clean_cell(text)
    return grid


def _cut_off(bbox: tuple[float, float, float, float], words: list[Word]) -> bool:
    """Words on the table's rows just left or right of it: the grid does not hold the whole table."""
    x0, top, x1, bottom = bbox
    for word in words:
        cy = (word.top + word.bottom) / 2
        if not top < cy < bottom:
            continue
        reach = 6 * word.height
        if x0 - reach < word.x1 <= x0 + 0.5 or x1 - 0.5 <= word.x0 < x1 + reach:
            return True
    return False
