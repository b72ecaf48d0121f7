"""Markdown with markdown-it-py: the source is cut at headings, and each block keeps its
heading path. Sections are slices of the source text, so offsets point into what the author
wrote; table rows (GFM tables) are recorded with their row numbers."""

from __future__ import annotations

import bisect

from markdown_it import MarkdownIt

from services.rag.documents import ParsedDocument, Section
from services.rag.ingest.parsers.cleaning import clean_text, decode_text
from services.rag.ingest.parsers.limits import ParseLimits, too_large

_PARSER = MarkdownIt("commonmark").enable("table")


def _inline_text(token) -> str:
    parts = [child.content for child in token.children or () if child.type in ("text", "code_inline")]
    return " ".join("".join(parts).split()) or token.content.strip()


def parse_markdown(data: bytes, limits: ParseLimits) -> ParsedDocument:
    text = clean_text(decode_text(data))
    if len(text) > limits.max_text_chars:
        raise too_large("extracted characters", limits.max_text_chars, "TOO_MUCH_TEXT")
    line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def offset(line: int) -> int:
        return line_starts[line] if line < len(line_starts) else len(text)

    tokens = _PARSER.parse(text)
    # (start line, level, heading text) of every heading, and (line, row number) of table rows.
    headings: list[tuple[int, int, str]] = []
    rows: list[tuple[int, int]] = []
    row_number = 0
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.map:
            headings.append((token.map[0], int(token.tag[1]), _inline_text(tokens[i + 1])))
        elif token.type == "table_open":
            row_number = 0
        elif token.type == "tr_open" and token.map:
            row_number += 1
            rows.append((token.map[0], row_number))

    bounds = [(0, 0, "")] + headings
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    for index, (line, level, heading) in enumerate(bounds):
        if index:
            path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, heading)]
        end_line = bounds[index + 1][0] if index + 1 < len(bounds) else len(line_starts)
        start, end = offset(line), offset(end_line)
        body = text[start:end]
        lead = len(body) - len(body.lstrip())
        body = body.strip()
        if not body:
            continue
        first = bisect.bisect_left(rows, (line, 0))
        last = bisect.bisect_left(rows, (end_line, 0))
        row_starts = tuple((offset(r_line) - start - lead, number) for r_line, number in rows[first:last])
        sections.append(Section(text=body, heading_path=tuple(t for _, t in path), row_starts=row_starts))
    title = headings[0][2] if headings else ""
    return ParsedDocument(tuple(sections), title=title)
