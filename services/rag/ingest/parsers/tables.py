"""Renders table rows as text lines, remembering where each row starts.

Rows become ``cell | cell | cell`` lines. Long tables are cut into blocks that fit a chunk,
each block repeating the header line so every chunk knows its columns; provenance keeps the
source row numbers of every block.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from services.rag.documents import Section

CELL_SEPARATOR = " | "


def row_line(cells: Sequence[str]) -> str:
    return CELL_SEPARATOR.join(cells).rstrip()


@dataclass
class TextBuilder:
    """Accumulates the text of one section, with the start offset of every table row."""

    parts: list[str] = field(default_factory=list)
    length: int = 0
    row_starts: list[tuple[int, int]] = field(default_factory=list)

    def add(self, text: str, row: int | None = None) -> None:
        if row is not None:
            self.row_starts.append((self.length, row))
        self.parts.append(text)
        self.length += len(text)

    def paragraph(self, text: str) -> None:
        """Appends a paragraph separated from the previous one by a blank line."""
        if not text:
            return
        if self.length:
            self.add("\n\n")
        self.add(text)

    def table(self, rows: Iterable[tuple[int, Sequence[str]]]) -> None:
        """Appends table rows, one line each, as a paragraph of its own."""
        first = True
        for number, cells in rows:
            line = row_line(cells)
            if not line.strip():
                continue
            if first:
                if self.length:
                    self.add("\n\n")
                first = False
            else:
                self.add("\n")
            self.add(line, row=number)

    @property
    def empty(self) -> bool:
        return not "".join(self.parts).strip()

    def section(self, **where) -> Section:
        return Section(text="".join(self.parts), row_starts=tuple(self.row_starts), **where)


def inline_row_starts(text: str) -> tuple[tuple[int, int], ...]:
    """Row offsets of the ``cell | cell`` lines already in a text (an OCR'd table): each run of such
    lines is a table numbered from 1, its header row."""
    starts: list[tuple[int, int]] = []
    offset, number = 0, 0
    for line in text.split("\n"):
        if CELL_SEPARATOR in line:
            number += 1
            starts.append((offset, number))
        else:
            number = 0
        offset += len(line) + 1
    return tuple(starts)


def fits_one_block(rows: Sequence[tuple[int, Sequence[str]]], block_chars: int) -> bool:
    """Whether a table's rendered rows fit one chunk-sized block (then it may stay inline with the
    prose around it; a longer one becomes blocks of its own, each repeating the header)."""
    return sum(len(row_line(cells)) + 1 for _, cells in rows) <= block_chars


def table_blocks(
    header: tuple[int, Sequence[str]] | None,
    rows: Iterable[tuple[int, Sequence[str]]],
    block_chars: int,
    **where,
) -> list[Section]:
    """Sections of at most ~``block_chars`` characters, each starting with the header line."""
    head = row_line(header[1]) if header else ""
    # A header too long to share a chunk with rows (hundreds of columns) is kept once, not per block.
    repeat = len(head) <= block_chars // 3
    sections: list[Section] = []
    builder: TextBuilder | None = None

    def start() -> TextBuilder:
        b = TextBuilder()
        if head and (repeat or not sections):
            b.add(head)
        return b

    for number, cells in rows:
        line = row_line(cells)
        if not line.strip():
            continue
        if builder is None:
            builder = start()
        elif builder.row_starts and builder.length + 1 + len(line) > block_chars:
            sections.append(builder.section(**where))
            builder = start()
        if builder.length:
            builder.add("\n")
        builder.add(line, row=number)
    if builder is not None and builder.row_starts:
        sections.append(builder.section(**where))
    elif header is not None and head.strip():
        # A table with a header and no data rows still has text worth keeping.
        sections.append(Section(text=head, row_starts=((0, header[0]),), **where))
    return sections
