"""Re-joins a PDF page's wrapped lines into paragraphs, keeping list items and ``key: value`` lines whole.

PDF text comes as one line per printed line. A line that fills the column (or runs on in lower
case) continues on the next one and is joined to it with a space; a line ending in a hyphen
is joined without one (PDFium's U+FFFE/U+0002 soft hyphens and U+00AD are dropped, a printed
hyphen is kept). Bullet and numbered items, ``Fax: 202-493-2251`` lines and short lines
(headings, signatures, addresses) start a line of their own, so they are never merged into
the paragraph around them; a wrapped item's continuation lines are joined to it.

A line made mostly of numbers (three or more) is a table row and stays a line. Lines stay separated by one
newline, so the chunker's line breaks fall between units. Used on PDF text layers and on OCR text.
"""

from __future__ import annotations

import re

_SOFT_HYPHENS = re.compile(r"[\u00ad\ufffe\x02]\s*\n?")
BULLET_GLYPHS = re.compile(r"^(\s*)[\uf0b7\uf0a7\uf076\uf0d8\uf0fc\uf0a8\u25aa\u25cf\u25e6\u2219\u2023\u2043\u25a0]\s*")
_LIST_ITEM = re.compile(
    r"^\s*(?:[•\-\u2013\u2014*+o·>]\s+|\(?\d{1,3}[.)]\s+|\(?[a-zA-Z][.)]\s+|\([ivxlc]{1,5}\)\s+|[ivx]{1,4}\.\s+)"
)
_KEY_WORD = r"[\w\u00c0-\u017f’'()/&.,#-]"
_KEY_VALUE = re.compile(rf"^\s*[A-Z\u00c0-\u00de]{_KEY_WORD}*(?: {_KEY_WORD}+){{0,4}} ?: +\S")
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*$")
_NUMBER = re.compile(r"(?<![\w.])[-(]?[$€£]?\d[\d,.]*%?\)?(?![\w])")
_ROW_NUMBERS = 3
_CELLS = " | "
"""A table row in the shared convention (OCR'd tables are rendered so)."""
_FULL_LINE = 0.78
"""A line at least this fraction of the page's typical long-line length filled its column."""
_MIN_TYPICAL = 45


def _typical_length(lines: list[str]) -> int:
    lengths = sorted(len(line) for line in lines if len(line) >= 20)
    if not lengths:
        return 0
    if len(lengths) < 5:  # too few lines for a percentile: the longest one filled the column
        return max(lengths[-1], _MIN_TYPICAL)
    return max(lengths[int(0.6 * (len(lengths) - 1))], _MIN_TYPICAL)


def _row_of_numbers(line: str) -> bool:
    """A line of three numbers or more that are much of its words: a table row (one no table finder
    saw, or OCR text). Prose with a date and an amount is not one."""
    numbers = len(_NUMBER.findall(line))
    return numbers >= _ROW_NUMBERS and numbers >= 0.4 * len(line.split())


def starts_unit(line: str) -> bool:
    """A list item or a ``key: value`` line: it never continues the line before it."""
    return bool(_LIST_ITEM.match(line) or _KEY_VALUE.match(line))


def reflow(text: str) -> str:
    """``text``'s wrapped lines joined into paragraphs (see the module docstring)."""
    text = _SOFT_HYPHENS.sub("", text)
    lines = [BULLET_GLYPHS.sub(r"\1• ", line.rstrip()) for line in text.split("\n")]
    typical = _typical_length([line.strip() for line in lines])
    out: list[str] = []
    last = ""  # the previous printed line (not the paragraph it joined)
    blank = False
    for raw in lines:
        line = raw.strip()
        if not line:
            blank = True
            continue
        if out and not blank and _continues(last, line, typical):
            prev = out[-1]
            out[-1] = prev + line if prev.endswith("-") and line[:1].islower() else f"{prev} {line}"
        else:
            if out and blank:
                out.append("")
            out.append(line)
        last = line
        blank = False
    return "\n".join(out)


def _continues(prev: str, line: str, typical: int) -> bool:
    if starts_unit(line) or _row_of_numbers(prev) or _row_of_numbers(line) or _CELLS in prev or _CELLS in line:
        return False
    if prev.endswith("-") and line[:1].islower():
        return True
    full = typical > 0 and len(prev) >= _FULL_LINE * typical
    if full:
        return True
    # A short line that ends mid-sentence and a line that carries on in lower case.
    return line[:1].islower() and not _SENTENCE_END.search(prev) and not prev.endswith(":") and len(prev) >= 25
