"""The matching rule of every evaluation: the product's evaluation runs and the benches (bench/docqa_score.py
re-exports this module) judge an answer the same way, from one copy of the rule.

An answer is correct when its text, or the excerpt of a span it cites, contains an accepted answer
after normalising both sides (lower case, the dashes U+2010-2015 and U+2212 as "-", every run of
whitespace as one space), and the match starts and ends on word and number boundaries: no letter,
digit or "_" right before or after it; a number not inside a longer number (not right after
"digit." or right before ".digit") and not running into a thousands group (",ddd"). An unanswerable
item (no accepted answers) is correct only when the engine abstains (refuses): no citation, or
support INSUFFICIENT.

A citation hit: one of the answer's citations is in the expected document (its file name or its
document id) and on the expected page or sheet when the item names one. An item that names no
document counts a citation as a hit when its excerpt contains an accepted answer (the answer is
backed by what it cites). Rates over answerable items count an abstention as a miss.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DASHES = re.compile("[\u2010-\u2015\u2212]")
_SPACE = re.compile(r"\s+")
INSUFFICIENT = "INSUFFICIENT"


def normalise(text: str) -> str:
    return _SPACE.sub(" ", _DASHES.sub("-", text.lower())).strip()


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _bounded(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    if (before and _is_word(before)) or (after and _is_word(after)):
        return False
    match = text[start:end]
    if match[:1].isdigit() and start >= 2 and before in ".," and text[start - 2].isdigit():
        return False  # "3" inside "7.3", "073" inside "1,073"
    if match[-1:].isdigit() and after in ".," and end + 1 < len(text) and text[end + 1].isdigit():
        return False  # "13" inside "13.0", "73" inside "73,000"
    return True


def contains(text: str, gold: str) -> bool:
    """Does ``text`` contain ``gold`` under the matching rule?"""
    haystack, needle = normalise(text), normalise(gold)
    if not needle:
        return False
    start = haystack.find(needle)
    while start >= 0:
        if _bounded(haystack, start, start + len(needle)):
            return True
        start = haystack.find(needle, start + 1)
    return False


@dataclass(frozen=True)
class Cited:
    """One citation of an answer, in transport-neutral form."""

    filename: str
    page: int
    sheet_name: str
    excerpt: str
    row: str = ""
    column: str = ""
    document_id: str = ""


@dataclass(frozen=True)
class Reply:
    """What the engine said, in transport-neutral form."""

    answer: str
    support_status: str
    citations: tuple[Cited, ...]
    seconds: float


@dataclass(frozen=True)
class Expected:
    """What an item accepts: answer strings (none: unanswerable), and where the evidence is, when known."""

    answers: tuple[str, ...]
    document: str = ""
    page: int = 0
    sheet: str = ""

    @property
    def answerable(self) -> bool:
        return bool(self.answers)


@dataclass(frozen=True)
class Judgement:
    answered: bool
    correct: bool
    citation_hit: bool

    @property
    def refused(self) -> bool:
        return not self.answered


def abstained(reply: Reply) -> bool:
    return not reply.citations or reply.support_status.endswith(INSUFFICIENT)


def _in_place(citation: Cited, expected: Expected) -> bool:
    return (citation.filename == expected.document or citation.document_id == expected.document) \
        and (not expected.page or citation.page == expected.page) \
        and (not expected.sheet or citation.sheet_name == expected.sheet)


def judge(expected: Expected, reply: Reply) -> Judgement:
    answered = not abstained(reply)
    if not expected.answerable:
        return Judgement(answered, not answered, False)
    texts = [reply.answer, *(c.excerpt for c in reply.citations)]
    correct = answered and any(contains(t, g) for t in texts for g in expected.answers)
    if expected.document:
        hit = answered and any(_in_place(c, expected) for c in reply.citations)
    else:
        hit = answered and any(contains(c.excerpt, g) for c in reply.citations for g in expected.answers)
    return Judgement(answered, correct, hit)
