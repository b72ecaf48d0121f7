"""Questions computed over a table's column: "which X has the highest Y", "what is the lowest Y", "how many rows".

Not lookups: the answer is in no single row until the column is compared. The table is the one the
evidence's rows come from, read whole from its document (every chunk of a table repeats its header, so
its rows are found by that header); the column is the numeric one whose header is nearest the question
(embedder cosine, shared terms). The winning row is cited with its cell; a count cites the header.
A question that names one of the table's rows is a lookup, not an aggregate, and is left to the ranker.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from services.rag.answers import lexical
from services.rag.answers.tables import Cell, Row, Table, is_numeric, tables_in
from services.rag.answers.units import row_label
from services.rag.documents import Chunk

# Comparative adjectives only: "top", "best" and "worst" name things too ("the 2013 Top 10", "best practice").
_HIGH = re.compile(r"\b(?:highest|largest|greatest|biggest|most|maximum|longest|tallest|heaviest|oldest|richest)\b",
                   re.I)
_LOW = re.compile(r"\b(?:lowest|smallest|least|fewest|minimum|shortest|lightest|youngest|cheapest)\b", re.I)
_COUNT = re.compile(r"\bhow\s+many\s+(?:rows|entries|records|lines|items)\b"
                    r"|\bhow\s+many\s+[\w-]+(?:\s+[\w-]+){0,2}\s+(?:are|were)\s+(?:there\s+)?(?:listed|included|"
                    r"in\s+the\s+(?:table|list|sheet|spreadsheet|file|dataset))\b", re.I)
MIN_NUMERIC_SHARE = 0.6
MIN_HEADER_SIMILARITY = 0.25


@dataclass(frozen=True)
class Aggregate:
    kind: str
    """"max", "min" or "count"."""
    value: str
    chunk: Chunk
    row: Row
    cell: Cell | None
    label: str
    column: str
    rows: int


def asked(question: str) -> str | None:
    """"max", "min", "count" or None (a lookup)."""
    if _COUNT.search(question):
        return "count"
    high, low = _HIGH.search(question), _LOW.search(question)
    if high and not low:
        return "max"
    if low and not high:
        return "min"
    return None


def _number(text: str) -> float | None:
    if not is_numeric(text):
        return None
    cleaned = re.sub(r"[^\d.\-]", "", text.split("(")[0])
    try:
        return float(cleaned)
    except ValueError:
        return None


def whole_table(header: Sequence[str], chunks: Sequence[Chunk]) -> list[tuple[Chunk, Table, Row]]:
    """Every row, across the document's chunks, of the table with this header."""
    rows = []
    for chunk in chunks:
        for table in tables_in(chunk.text):
            if table.header is not None and table.header.texts() == list(header):
                rows += [(chunk, table, row) for row in table.rows if len(row.cells) == len(header)]
    return rows


def compute(question: str, kind: str, header: Sequence[str], chunks: Sequence[Chunk],
            similarity: Callable[[str, Sequence[str]], np.ndarray]) -> Aggregate | None:
    rows = whole_table(header, chunks)
    if len(rows) < 2:
        return None
    q_lower = " ".join(question.lower().split())
    if any(len(label) > 2 and label.lower() in q_lower for label in (row_label(r) for _, _, r in rows)):
        return None  # the question names a row: a lookup
    if kind == "count":
        chunk, table, _ = rows[0]
        assert table.header is not None
        return Aggregate("count", str(len(rows)), chunk, table.header, None, "", "", len(rows))
    columns = [i for i in range(len(header))
               if sum(_number(r.cells[i].text) is not None for _, _, r in rows) >= MIN_NUMERIC_SHARE * len(rows)]
    if not columns:
        return None
    names = [header[i] for i in columns]
    q_terms = lexical.content_terms(question)
    scores = similarity(question, names) + 0.3 * np.asarray([bool(lexical.content_terms(n) & q_terms) for n in names])
    best = int(np.argmax(scores))
    if scores[best] < MIN_HEADER_SIMILARITY:
        return None
    column = columns[best]
    valued = [(v, c, r) for c, _, r in rows if (v := _number(r.cells[column].text)) is not None]
    pick = max if kind == "max" else min
    value, chunk, row = pick(valued, key=lambda t: t[0])
    cell = row.cells[column]
    return Aggregate(kind, cell.text, chunk, row, cell, row_label(row), header[column], len(rows))
