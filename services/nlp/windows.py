"""Cuts long texts into contiguous windows so models with length limits still see all of it.

Windows cover the text exactly (no gaps, no overlap) and end at the best boundary before
the size limit: a blank line, else a sentence end, else whitespace, else a hard cut. The
offsets index the original text, so results found in a window map back by adding its start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BOUNDARIES = (
    re.compile(r"\n\s*\n"),
    re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+"),
    re.compile(r"\s+"),
)


@dataclass(frozen=True)
class Window:
    start: int
    end: int

    def of(self, text: str) -> str:
        return text[self.start : self.end]


def split(text: str, max_chars: int) -> list[Window]:
    """Contiguous windows of at most ``max_chars`` characters covering ``text``."""
    if max_chars <= 0:
        raise ValueError("max_chars must be positive")
    windows: list[Window] = []
    start = 0
    while len(text) - start > max_chars:
        end = _cut(text, start, start + max_chars)
        windows.append(Window(start, end))
        start = end
    if start < len(text) or not windows:
        windows.append(Window(start, len(text)))
    return windows


def _cut(text: str, start: int, limit: int) -> int:
    """The end of the window starting at ``start``: the last boundary in its second half."""
    floor = start + (limit - start) // 2
    for boundary in _BOUNDARIES:
        last = None
        for match in boundary.finditer(text, floor, limit):
            last = match
        if last is not None:
            return last.end()
    return limit
