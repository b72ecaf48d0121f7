"""Evidence units: what an answer cites. Sentences, table rows, form fields and list items of retrieved chunks.

A unit is the smallest span of a chunk that states one fact by itself: a sentence of prose, a table row
(read with its column headers), a ``Label: value`` line, a list item. Units come from the chunk's own
text (``sentences.split_sentences`` already treats rows, fields and items as units of their own), with
exact offsets, so a cited unit is an exact span of its page. The table a row belongs to gives it its
header and title (``tables``), which the ranker reads beside the row: "how many staff" is answered by
the row of the depot under the column "Headcount".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from services.rag.answers import lexical
from services.rag.answers.injection import is_instruction
from services.rag.answers.sentences import Span, split_sentences
from services.rag.answers.tables import Cell, Row, Table, tables_in
from services.rag.retrieval import RetrievedChunk

_FIELD = re.compile(r"^\s*(?P<label>[^\n:|]{1,60}?)\s*[:：]\s*(?P<value>\S.*)$", re.S)
_ITEM = re.compile(r"^\s*(?:[-*•▪‣◦]|\d{1,3}[.)]|[a-zA-Z][.)])\s+")


class UnitKind(StrEnum):
    SENTENCE = "sentence"
    ROW = "row"
    FIELD = "field"
    ITEM = "item"


@dataclass(frozen=True)
class Unit:
    hit: RetrievedChunk
    rank: int
    """The chunk's rank in the evidence pool (0 is best)."""
    span: Span
    """Offsets inside the chunk's text."""
    kind: UnitKind
    position: int
    """The unit's index among its chunk's units."""
    table: Table | None = None
    row: Row | None = None
    """For a row: the table and the row's cells (offsets inside the chunk's text)."""
    label: str = ""
    """A field's label ("Cashier"), a row's label cell ("Duster 360"); empty otherwise."""
    value: Span | None = None
    """A field's value, offsets inside the chunk's text."""
    context: str = ""
    """What the unit is read under: a row's column headers and table title, the chunk's heading path."""
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def text(self) -> str:
        return self.span.text

    @property
    def document_id(self) -> str:
        return self.hit.chunk.document_id

    @property
    def page_start(self) -> int:
        return self.hit.chunk.provenance.char_start + self.span.start

    @property
    def page_end(self) -> int:
        return self.hit.chunk.provenance.char_start + self.span.end

    @property
    def header_cells(self) -> tuple[Cell, ...]:
        return self.table.header.cells if self.table is not None and self.table.header is not None else ()


def _row_at(tables: Sequence[Table], span: Span) -> tuple[Table, Row] | None:
    for table in tables:
        for row in table.rows:
            if row.start <= span.start < row.end or span.start <= row.start < span.end:
                return table, row
    return None


def row_label(row: Row) -> str:
    """The row's first cell with letters (its label), else its first cell."""
    for cell in row.cells:
        if any(ch.isalpha() for ch in cell.text):
            return cell.text
    return row.cells[0].text if row.cells else ""


def _heading(hit: RetrievedChunk) -> str:
    p = hit.chunk.provenance
    return " ".join((p.filename.rsplit(".", 1)[0].replace("_", " ").replace("-", " "), p.sheet_name, *p.heading_path))


def units_of(hit: RetrievedChunk, rank: int) -> list[Unit]:
    """Every unit of one chunk, in text order (planted instructions are never evidence)."""
    text = hit.chunk.text
    tables = tables_in(text)
    heading = _heading(hit)
    out: list[Unit] = []
    for position, span in enumerate(split_sentences(text)):
        if not lexical.tokens(span.text) or is_instruction(span.text):
            continue
        found = _row_at(tables, span)
        if found is not None and len(found[1].cells) >= 2:
            table, row = found
            header = " | ".join(table.header.texts()) if table.header is not None else ""
            out.append(Unit(hit, rank, span, UnitKind.ROW, position, table, row, row_label(row),
                            context=" ".join(p for p in (heading, table.title, header) if p)))
            continue
        match = _FIELD.match(span.text)
        if match and len(lexical.tokens(match.group("label"))) <= 6 and not match.group("label").strip().isdigit():
            start = span.start + match.start("value")
            value = Span(start, span.start + match.end("value"), match.group("value"))
            out.append(Unit(hit, rank, span, UnitKind.FIELD, position, label=match.group("label").strip(),
                            value=value, context=heading))
            continue
        line_start = text.rfind("\n", 0, span.start) + 1
        kind = UnitKind.ITEM if _ITEM.match(text[line_start : span.end]) else UnitKind.SENTENCE
        out.append(Unit(hit, rank, span, kind, position, context=heading))
    return out


def units(pool: Sequence[RetrievedChunk]) -> list[Unit]:
    """The units of every chunk of the pool, each once (chunk overlaps repeat them), in pool order."""
    seen: set[tuple[str, int, int]] = set()
    out: list[Unit] = []
    for rank, hit in enumerate(pool):
        p = hit.chunk.provenance
        for unit in units_of(hit, rank):
            key = (p.document_id, p.section_index, p.char_start + unit.span.start)
            if key in seen:
                continue
            seen.add(key)
            out.append(unit)
    return out
