"""Tokenisation shared by the NLP operations: words, sentences with offsets, paragraphs."""

from __future__ import annotations

import re

_WORD = re.compile(r"[A-Za-z0-9\u00C0-\u024F]+(?:['’][A-Za-z]+)*")
# A sentence ends at . ! ? (optionally followed by citation markers such as "[12]" and
# closing quotes/brackets) before whitespace, or at a blank line. Common abbreviations do
# not end a sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])(?P<tail>(?:\[\d+\]|[\"'”’)\]])*)\s+|\n\s*\n")
_LEADING_JUNK = re.compile(r"(?:\s|\[\d+\])*")
_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "inc", "ltd", "co", "corp",
    "fig", "no", "vol", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "u.s",
}

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having he
    her here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
    now of off on once only or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves may might must
    shall upon within without also however therefore thus although though since unless whether either neither
    each every many much several one two three first second new used using use via per""".split()
)


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each sentence, whitespace-trimmed; empty text has none."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        candidate = text[start : match.start()].rstrip()
        tail = match.group("tail") or ""
        last_word = candidate.rsplit(None, 1)[-1].rstrip(".").lower() if candidate.split() else ""
        if not tail and "\n" not in match.group() and last_word in _ABBREVIATIONS:
            continue
        if last_word and len(last_word) == 1 and last_word.isalpha() and candidate.endswith("."):
            continue  # initials such as "J. Smith"
        # Closing quotes, brackets and citation markers belong to the sentence they end.
        _append(text, start, match.start() + len(tail), spans)
        start = match.end()
    _append(text, start, len(text), spans)
    return spans


def _append(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    segment = text[start:end]
    # A citation marker left at the start ("[13] Roberts ...") belongs to no sentence.
    lead = m.end() if (m := _LEADING_JUNK.match(segment)) else 0
    stripped = segment[lead:].rstrip()
    if not stripped or not _WORD.search(stripped):
        return
    spans.append((start + lead, start + lead + len(stripped)))


def bounded_spans(text: str, spans: list[tuple[int, int]], max_words: int) -> list[tuple[list[tuple[int, int]], bool]]:
    """Each span as itself when it has at most ``max_words`` words, else cut at row (line) and then word boundaries.

    Text without sentence punctuation (CSV, a table's ``cell | cell`` rows, a list without full stops) is one
    "sentence" of hundreds of words; its pieces are what a summary can still quote. Returns, per span, its pieces
    and whether it was cut. Offsets stay exact and pieces are whitespace-trimmed.
    """
    out: list[tuple[list[tuple[int, int]], bool]] = []
    for start, end in spans:
        if len(_WORD.findall(text, start, end)) <= max_words:
            out.append(([(start, end)], False))
            continue
        pieces: list[tuple[int, int]] = []
        for line in re.finditer(r"[^\n]+", text[start:end]):
            line_start, line_end = start + line.start(), start + line.end()
            found = list(_WORD.finditer(text, line_start, line_end))
            if not found:
                continue
            for first in range(0, len(found), max_words):
                group = found[first : first + max_words]
                # A window runs from its first word to the last character before the next window's first word.
                stop = found[first + max_words].start() if first + max_words < len(found) else line_end
                piece_start = group[0].start() if first else line_start
                _append(text, piece_start, stop, pieces)
        out.append((pieces, True))
    return out


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
