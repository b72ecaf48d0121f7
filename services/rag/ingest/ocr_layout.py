"""Tesseract's TSV output (every word with its box) as page text, tables as ``cell | cell`` rows.

Lines and paragraphs come from Tesseract's own layout (block, paragraph, line numbers), as in its
plain-text output. The word boxes then go through the PDF table finder
(``parsers.pdf.table_finder``): a table's lines are replaced, where the first of them stood, by
its rows, the header row first, so a scanned table reads by row and column like a digital one.
A ``|`` that Tesseract reads from a drawn column rule separates cells. Pages read turned (their
lines are not left to right) keep their lines as read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from services.rag.ingest.parsers.pdf.table_finder import PdfTable, Word, find_tables
from services.rag.ingest.parsers.tables import row_line

log = logging.getLogger("docuthinker.rag.ocr")

_WORD_LEVEL = "5"
_COLUMNS = 12


@dataclass(frozen=True)
class _OcrWord:
    key: tuple[int, int, int]
    """(block, paragraph, line)."""
    word: Word


def text_from_tsv(tsv: str) -> str:
    words = _words(tsv)
    tables: list[PdfTable] = []
    if words and _upright(words):
        try:
            tables = find_tables([w.word for w in words], (), centred=True)
        except Exception as exc:  # noqa: BLE001 - tables are an extra: the page keeps its lines
            log.warning("table detection failed on an OCR'd page (%s)", exc)
    return _render(words, tables)


def _words(tsv: str) -> list[_OcrWord]:
    out: list[_OcrWord] = []
    for line in tsv.splitlines()[1:]:
        fields = line.split("\t")
        if len(fields) < _COLUMNS or fields[0] != _WORD_LEVEL or not fields[11].strip():
            continue
        try:
            block, par, number = int(fields[2]), int(fields[3]), int(fields[4])
            left, top, width, height = (int(v) for v in fields[6:10])
        except ValueError:
            continue
        text = fields[11].strip()
        key = (block, par, number)
        # "Processing|total": a column rule read as a pipe. Keep it as a word of its own.
        parts = text.split("|")
        step = width / max(len(text), 1)
        at = 0
        for index, part in enumerate(parts):
            if part:
                out.append(_OcrWord(key, Word(left + at * step, left + (at + len(part)) * step, top, top + height, part)))
            at += len(part)
            if index < len(parts) - 1:
                out.append(_OcrWord(key, Word(left + at * step, left + (at + 1) * step, top, top + height, "|")))
                at += 1
    return out


def _upright(words: list[_OcrWord]) -> bool:
    """Whether Tesseract's lines run left to right on one baseline (not a page it read turned)."""
    pairs = good = 0
    for a, b in zip(words, words[1:], strict=False):
        if a.key != b.key:
            continue
        pairs += 1
        height = max(a.word.height, b.word.height)
        good += b.word.x0 >= a.word.x0 and abs(b.word.bottom - a.word.bottom) <= height
    return pairs == 0 or good >= 0.8 * pairs


def _render(words: list[_OcrWord], tables: list[PdfTable]) -> str:
    def owner(word: Word) -> int:
        cx, cy = (word.x0 + word.x1) / 2, (word.top + word.bottom) / 2
        for number, table in enumerate(tables):
            x0, top, x1, bottom = table.bbox
            if x0 - 1 <= cx <= x1 + 1 and top - 1 <= cy <= bottom + 1:
                return number
        return -1

    paragraphs: list[list[str]] = []
    lines: dict[tuple[int, int, int], list[str]] = {}
    placed: set[int] = set()
    last_par: tuple[int, int] | None = None
    for item in words:
        table = owner(item.word) if tables else -1
        if table >= 0:
            if table not in placed:
                placed.add(table)
                paragraphs.append([row_line(row) for row in tables[table].rows])
                last_par = None
            continue
        par = item.key[:2]
        if par != last_par:
            paragraphs.append([])
            last_par = par
        if item.key not in lines:
            lines[item.key] = []
            paragraphs[-1].append("")
        if item.word.text == "|":
            continue
        lines[item.key].append(item.word.text)
        paragraphs[-1][-1] = " ".join(lines[item.key])
    blocks = ["\n".join(line for line in par if line) for par in paragraphs]
    return "\n\n".join(block for block in blocks if block)
