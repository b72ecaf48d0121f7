"""Sentence spans of a text, with exact character offsets.

spaCy's rule-based sentencizer finds sentence ends inside prose; line structure is handled
first, because extracted documents carry it: blank lines end paragraphs, list items and table
rows are units of their own, while a hard line wrap inside a PDF sentence is not a boundary.
Every span satisfies ``text[start:end] == span.text``, which is what exact citations rest on.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import lru_cache

_LIST_ITEM = re.compile(r"^\s*(?:[-*•▪‣◦]|\d{1,3}[.)]|[a-zA-Z][.)])\s+")
_TABLE_ROW = re.compile(r"\t|\s\|\s|^\s*\|")
_CLOSES_LINE = re.compile(r"[.!?;)\]\"']\s*$")
_KEY_VALUE = re.compile(r"^\s*[A-Z\u00C0-\u024F][\w\u00C0-\u024F .,'’()/&-]{0,48}?\s?:\s*\S")
_SHORT_LINE = 0.6
"""A line shorter than this share of the text's longest line ends its unit (a wrapped line fills the width)."""
_TRIM_LEADING = re.compile(r"^(?:\s|[-*•▪‣◦]\s|\d{1,3}[.)]\s|#+\s)+")
_MAX_SENTENCE_CHARS = 600
_TITLE = re.compile(r"(?:^|\s)(?:Mr|Mrs|Ms|Mx|Dr|Prof|Rev|Hon|Sen|Rep|Gov|Gen|Col|Capt|Lt|Sgt|Messrs)\.$")
"""A title before a name never ends a sentence ("Dr. Smith")."""
_ABBREVIATION = re.compile(
    r"(?:^|[\s(])(?:St|Ste|Ave|Blvd|Rd|Hwy|Apt|Bldg|Fl|Dept|Mt|Ft|No|Nos|Nr|Fig|Figs|Vol|Vols|Ch|Sec|Art|Ref|Ed|Eds"
    r"|pp?|para|approx|ca|cf|vs|viz|al|etc|incl|est|Inc|Corp|Co|Ltd|LLC|Bros|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept"
    r"|Oct|Nov|Dec|e\.g|i\.e)\.$")
"""Abbreviations that end a sentence only when a capitalised word follows: "Ste. 305", "Fig. 3", "No. 5" go on."""


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str


_lock = threading.Lock()


@lru_cache(maxsize=1)
def _sentencizer():
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def _blocks(text: str) -> list[tuple[int, int]]:
    """Offsets of line blocks: paragraphs, list items and table rows; wrapped lines are joined."""
    blocks: list[tuple[int, int]] = []
    start = None
    prev_line = ""
    pos = 0
    widest = max((len(line.strip()) for line in text.splitlines()), default=0)
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        line_start, pos = pos, pos + len(line)
        if not stripped:
            if start is not None:
                blocks.append((start, line_start))
                start = None
            prev_line = ""
            continue
        breaks = (
            start is None
            or _LIST_ITEM.match(line)
            or _TABLE_ROW.search(line)
            or _TABLE_ROW.search(prev_line)
            or _CLOSES_LINE.search(prev_line)
            or _KEY_VALUE.match(line)
            or _KEY_VALUE.match(prev_line)
            or (len(prev_line.strip()) < _SHORT_LINE * widest and not prev_line.rstrip().endswith((":", ",", "-"))
                and not stripped[:1].islower())
        )
        if breaks:
            if start is not None:
                blocks.append((start, line_start))
            start = line_start
        prev_line = line
    if start is not None:
        blocks.append((start, len(text)))
    return blocks


def split_sentences(text: str) -> list[Span]:
    """Non-empty sentence spans in text order, trimmed of whitespace and list markers.

    A sentence ending in ":" runs on into what follows the colon (the next unit, or the list
    items after it): "contact the office at:" is never a sentence on its own.
    """
    return list(_continued(text))


@lru_cache(maxsize=4096)
def _continued(text: str) -> tuple[Span, ...]:
    spans = list(_split(text))
    out: list[Span] = []
    i = 0
    while i < len(spans):
        span = spans[i]
        if span.text.endswith(":") and i + 1 < len(spans):
            end = spans[i + 1].end
            j = i + 2
            while j < len(spans) and _LIST_ITEM.match(_line_at(text, spans[j].start)) and spans[j].end - span.start < _MAX_SENTENCE_CHARS:
                end = spans[j].end
                j += 1
            out.append(Span(span.start, end, text[span.start:end]))
            i = j
            continue
        out.append(span)
        i += 1
    return tuple(out)


def _line_at(text: str, offset: int) -> str:
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    return text[start : end if end >= 0 else len(text)]


@lru_cache(maxsize=4096)
def _split(text: str) -> tuple[Span, ...]:
    # Cached: every answer splits all the chunks of its 20-chunk evidence pool, and the same
    # chunks come back for related questions (about a third of a warm query's CPU time).
    spans: list[Span] = []
    nlp = _sentencizer()
    for block_start, block_end in _blocks(text):
        block = text[block_start:block_end]
        with _lock:
            doc = nlp(block)
        pieces: list[Span] = []
        for sent in doc.sents:
            for start, end in _cap(block, sent.start_char, sent.end_char):
                span = _trim(text, block_start + start, block_start + end)
                if span is not None:
                    pieces.append(span)
        spans.extend(_rejoin_abbreviations(text, pieces))
    return tuple(spans)


def _rejoin_abbreviations(text: str, pieces: list[Span]) -> list[Span]:
    """The sentencizer ends a sentence at every "." before a digit or capital: undo it after abbreviations."""
    out: list[Span] = []
    for span in pieces:
        if out:
            prev = out[-1]
            head = span.text[:1]
            goes_on = bool(_TITLE.search(prev.text)) or (
                bool(_ABBREVIATION.search(prev.text)) and (head.isdigit() or head.islower() or head in "(#"))
            if goes_on and span.end - prev.start <= _MAX_SENTENCE_CHARS:
                out[-1] = Span(prev.start, span.end, text[prev.start:span.end])
                continue
        out.append(span)
    return out


def _cap(block: str, start: int, end: int) -> list[tuple[int, int]]:
    """Very long "sentences" (tables flattened into one line, run-on lists) cut at word ends."""
    pieces = []
    while end - start > _MAX_SENTENCE_CHARS:
        cut = block.rfind(" ", start, start + _MAX_SENTENCE_CHARS)
        cut = cut if cut > start else start + _MAX_SENTENCE_CHARS
        pieces.append((start, cut))
        start = cut
    pieces.append((start, end))
    return pieces


def _trim(text: str, start: int, end: int) -> Span | None:
    piece = text[start:end]
    lead = _TRIM_LEADING.match(piece)
    if lead:
        start += lead.end()
    while end > start and text[end - 1].isspace():
        end -= 1
    if end <= start or not any(ch.isalnum() for ch in text[start:end]):
        return None
    return Span(start, end, text[start:end])
