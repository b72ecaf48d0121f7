"""Markdown with markdown-it-py: the source is cut at headings, and each block keeps its
heading path. Prose sections are slices of the source text, so offsets point into what the
author wrote; GFM tables become sections of their own in the shared table convention
(``cell | cell`` rows, blocks repeating the header row, row numbers kept: the header is row 1)."""

from __future__ import annotations

from dataclasses import dataclass

from markdown_it import MarkdownIt

from services.rag.documents import ParsedDocument, Section
from services.rag.ingest.parsers.cleaning import clean_text, collapse_cell, decode_text
from services.rag.ingest.parsers.limits import ParseLimits, too_large
from services.rag.ingest.parsers.tables import table_blocks

_PARSER = MarkdownIt("commonmark").enable("table")


@dataclass
class _Table:
    start: int
    """First source line."""
    end: int
    """Line after the last one."""
    rows: list[tuple[int, list[str]]]


def _inline_text(token) -> str:
    parts = [child.content for child in token.children or () if child.type in ("text", "code_inline")]
    return " ".join("".join(parts).split()) or token.content.strip()


def _scan(tokens) -> tuple[list[tuple[int, int, str]], list[_Table]]:
    """(start line, level, text) of every heading, and every table with its rows."""
    headings: list[tuple[int, int, str]] = []
    tables: list[_Table] = []
    row: list[str] | None = None
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.map:
            headings.append((token.map[0], int(token.tag[1]), _inline_text(tokens[i + 1])))
        elif token.type == "table_open" and token.map:
            tables.append(_Table(token.map[0], token.map[1], []))
        elif token.type == "tr_open" and tables:
            row = []
        elif token.type == "inline" and row is not None:
            row.append(collapse_cell(token.content))
        elif token.type in ("th_close", "td_close") and row is not None and tokens[i - 1].type != "inline":
            row.append("")
        elif token.type == "tr_close" and row is not None and tables:
            tables[-1].rows.append((len(tables[-1].rows) + 1, row))
            row = None
    return headings, tables


def parse_markdown(data: bytes, limits: ParseLimits) -> ParsedDocument:
    text = clean_text(decode_text(data))
    if len(text) > limits.max_text_chars:
        raise too_large("extracted characters", limits.max_text_chars, "TOO_MUCH_TEXT")
    line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def offset(line: int) -> int:
        return line_starts[line] if line < len(line_starts) else len(text)

    headings, tables = _scan(_PARSER.parse(text))
    bounds = [(0, 0, "")] + headings
    sections: list[Section] = []
    path: list[tuple[int, str]] = []

    def prose(start_line: int, end_line: int, where: tuple[str, ...]) -> None:
        body = text[offset(start_line) : offset(end_line)]
        if body.strip():
            sections.append(Section(text=body.strip(), heading_path=where))

    for index, (line, level, heading) in enumerate(bounds):
        if index:
            path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, heading)]
        where = tuple(t for _, t in path)
        end_line = bounds[index + 1][0] if index + 1 < len(bounds) else len(line_starts)
        cursor = line
        for table in (t for t in tables if line <= t.start < end_line):
            prose(cursor, table.start, where)
            if table.rows:
                header, *rows = table.rows
                sections.extend(table_blocks(header, iter(rows), limits.table_block_chars, heading_path=where))
            cursor = table.end
        prose(cursor, end_line, where)
    title = headings[0][2] if headings else ""
    return ParsedDocument(tuple(sections), title=title)
