"""Splits sections into overlapping chunks on paragraph, sentence, row or word boundaries.

Every chunk is an exact slice ``section.text[start:end]``, so its provenance can highlight
the span. Prose prefers paragraph, then sentence, then line breaks; tables (sections with
rows) prefer row (line) breaks over sentences. A sentence ends at ``.!?;`` and at a colon that
ends a clause, never at a label's colon ("Fax: 202-...") or at one that introduces a list. The overlap restarts the next chunk at a
sentence, row or word boundary inside the last ``overlap`` characters.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from services.rag.documents import Section

_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_LINE = re.compile(r"\n")
_SENTENCE = re.compile(r"[.!?;][\"')\]]*\s")
_COLON = re.compile(r":[\"')\]]*[ \t]+(?=\S)")
_CLAUSE_START = re.compile(r"[.!?;:,\n]")
_CLAUSE_WORDS = 4
"""A colon inside a line ends a clause ("In this paper, we address the question: can we ...") after this many
words since the last punctuation or line start, and is a sentence break there; after fewer it ends a label
("Fax:", "RESULTS:", "Attention:") that belongs with what follows. A colon that ends a line introduces the
lines below (a list): never a break of its own."""
_WORD = re.compile(r"\s")
_RESTART_SENTENCE = re.compile(r"[.!?][\"')\]]*\s+(?=\S)")
_RESTART_LINE = re.compile(r"\n\s*(?=\S)")
_RESTART_WORD = re.compile(r"\s+(?=\S)")


@dataclass(frozen=True)
class ChunkerConfig:
    size: int = 900
    """Largest chunk in characters."""
    overlap: int = 120
    """Characters of the previous chunk repeated at the start of the next."""

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError("chunk size must be positive")
        if not 0 <= self.overlap < self.size:
            raise ValueError(f"chunk overlap ({self.overlap}) must be >= 0 and < chunk size ({self.size})")


@dataclass(frozen=True)
class ChunkSpan:
    section_index: int
    start: int
    end: int
    row_start: int = 0
    row_end: int = 0


def _last_break(pattern: re.Pattern[str], text: str, lo: int, hi: int) -> int | None:
    """Position just after the last match of ``pattern`` ending in (lo, hi]; None if none."""
    best = None
    for match in pattern.finditer(text, lo, hi):
        if match.end() > lo:
            best = match.end()
    return best


def _clause_colon(text: str, colon: int) -> bool:
    lo = max(0, colon - 200)
    starts = [m.end() for m in _CLAUSE_START.finditer(text, lo, colon)]
    return len(text[starts[-1] if starts else lo : colon].split()) >= _CLAUSE_WORDS


def _last_sentence_break(text: str, lo: int, hi: int) -> int | None:
    best = _last_break(_SENTENCE, text, lo, hi)
    for match in _COLON.finditer(text, best or lo, hi):
        if match.end() > lo and _clause_colon(text, match.start()):
            best = match.end()
    return best


def _cut(text: str, start: int, size: int, tabular: bool) -> int:
    limit = start + size
    if limit >= len(text):
        return len(text)
    floor = start + size // 2
    paragraph = functools.partial(_last_break, _PARAGRAPH)
    line = functools.partial(_last_break, _LINE)
    order = (paragraph, line, _last_sentence_break) if tabular else (paragraph, _last_sentence_break, line)
    for last_break in order:
        found = last_break(text, floor, limit)
        if found is not None:
            return found
    return _last_break(_WORD, text, start + 1, limit) or limit


def _restart(text: str, start: int, end: int, overlap: int, tabular: bool) -> int:
    """Where the next chunk starts: a boundary within the last ``overlap`` chars, else ``end``."""
    if overlap <= 0:
        return end
    lo = max(start + 1, end - overlap)
    order = (_RESTART_LINE, _RESTART_SENTENCE) if tabular else (_RESTART_SENTENCE, _RESTART_LINE)
    for pattern in (*order, _RESTART_WORD):
        match = pattern.search(text, lo, end)
        if match is not None and match.end() < end:
            return match.end()
    return end


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


class _Rows:
    """Maps a character span of a section to the table rows it touches."""

    def __init__(self, section: Section) -> None:
        self.offsets = [offset for offset, _ in section.row_starts]
        self.numbers = [number for _, number in section.row_starts]
        text = section.text
        self.ends = []
        for offset in self.offsets:
            newline = text.find("\n", offset)
            self.ends.append(len(text) if newline < 0 else newline)

    def covering(self, start: int, end: int) -> tuple[int, int]:
        if not self.offsets:
            return 0, 0
        first = max(0, bisect.bisect_right(self.offsets, start) - 1)
        last = bisect.bisect_left(self.offsets, end) - 1
        hits = [self.numbers[i] for i in range(first, last + 1) if self.offsets[i] < end and self.ends[i] > start]
        return (min(hits), max(hits)) if hits else (0, 0)


def chunk_section(section: Section, index: int, config: ChunkerConfig) -> list[ChunkSpan]:
    text = section.text
    rows = _Rows(section)
    tabular = bool(section.row_starts)
    spans: list[ChunkSpan] = []
    start, _ = _strip(text, 0, len(text))
    while start < len(text):
        end = _cut(text, start, config.size, tabular)
        a, b = _strip(text, start, end)
        if b > a:
            spans.append(ChunkSpan(index, a, b, *rows.covering(a, b)))
        if end >= len(text):
            break
        nxt = _restart(text, start, end, config.overlap, tabular)
        start, _ = _strip(text, max(nxt, start + 1), len(text))
        if start >= len(text):
            break
    return spans


def chunk_sections(sections: Sequence[Section], config: ChunkerConfig) -> list[ChunkSpan]:
    spans: list[ChunkSpan] = []
    for index, section in enumerate(sections):
        spans.extend(chunk_section(section, index, config))
    return spans
