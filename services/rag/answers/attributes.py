"""The attribute a typed question asks the value of, and whether a value in a text is labelled by it.

"How many *lines of code* ...", "What *fax* number ...", "What is Galaxy Gaming's *IRS Employer
Identification* Number?", "What *ticker* symbol ...": a number, code or phone number answers such a
question only when the document ties it to that attribute: the words right after it ("four lines
of code"), its line or the line beside it (``Fax: 202-493-2251``, a value over its form label
``(IRS Employer Identification No.)``). A value of the right shape anywhere else ("scored just four
goals" for "what shirt number") is a different fact, and answering with it is the confident wrong
answer users distrust most.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.rag.answers import lexical
from services.rag.answers.answer_types import AnswerType

_HOW_MANY = re.compile(r"\bhow\s+(?:many|much)\s+(.+)", re.I)
_STOP_AFTER = re.compile(
    r"\s(?:do|does|did|is|are|was|were|has|have|had|can|could|will|would|should|of|in|on|at|for|to|from|since|"
    r"per|with|by|that|there|it|they|we|you|he|she|the|a|an)\b", re.I)
_NAMED_VALUE = re.compile(
    r"\b(?:what|which)\s+(?:(?:is|are|was|were)\s+)?(?:the\s+|its\s+|their\s+|his\s+|her\s+)?(.{0,80}?)\s*"
    r"\b(numbers?|no\.?|codes?|symbols?|versions?|identifiers?|ids?|serial|references?)\b", re.I)
_POSSESSIVE = re.compile(r"^.*['’]s?\s+")
_GENERIC = frozenset({"number", "no", "id", "identifi", "refer", "serial", "code"})
_SYNONYMS: tuple[frozenset[str], ...] = (
    # Labels name the same field in other words (and on bilingual forms, in French).
    frozenset({"phone", "telephon", "tel", "call"}),
    frozenset({"fax", "facsimil", "copieur"}),  # "Télécopieur" tokenises to "t", "l", "copieur"
    frozenset({"ticker", "symbol", "trade"}),
)
_TOLL_FREE = re.compile(r"^\s*(?:\+?1[\s.-]?)?\(?8(?:00|33|44|55|66|77|88)\)?[\s.-]|^\s*0800|^\s*0808")
_TOKEN = re.compile(r"[\w'’.-]+")
NEXT_TOKENS = 4
"""A counted noun this close after the number ("200 laptops", "21 million passages") labels it."""
ZONE_CHARS = 60
"""How far before and after the value its label is looked for on its own line."""
FORM_LINE_CHARS = 50
"""A line this short (or a table row) holding the value is a form field: its label may be on the line beside it."""


@dataclass(frozen=True)
class Attribute:
    terms: frozenset[str]
    """Stemmed words naming the attribute (any one labels a value)."""
    counted: bool
    """A "how many X" question: X after the number is the strong label."""
    toll_free: bool = False


def attribute_of(question: str, kind: AnswerType) -> Attribute | None:
    """The attribute a number/code/phone question asks about, or None when it names none."""
    text = " ".join(question.split())
    if kind in (AnswerType.NUMBER, AnswerType.MONEY, AnswerType.PERCENT):
        match = _HOW_MANY.search(text)
        if match:
            tail = match.group(1)
            stop = _STOP_AFTER.search(" " + tail)
            phrase = (" " + tail)[: stop.start()] if stop else tail
            terms = lexical.content_terms(phrase.strip(" ?"))
            return Attribute(terms, True) if terms else None
    if kind in (AnswerType.NUMBER, AnswerType.CODE, AnswerType.PHONE):
        match = _NAMED_VALUE.search(text)
        if match:
            phrase = _POSSESSIVE.sub("", match.group(1))
            type_word = lexical.content_terms(match.group(2)) - _GENERIC
            terms = lexical.content_terms(phrase) | type_word
            toll_free = bool(re.search(r"toll[- ]?free", text, re.I))
            if terms:
                return Attribute(terms, False, toll_free)
        if kind is AnswerType.PHONE:
            terms = lexical.content_terms(text) & frozenset({"fax", "phone", "telephon", "tel"})
            toll_free = bool(re.search(r"toll[- ]?free", text, re.I))
            if terms or toll_free:
                return Attribute(terms, False, toll_free)
    return None


def _matches(terms: frozenset[str], have: frozenset[str]) -> bool:
    for term in terms:
        group = next((g for g in _SYNONYMS if term in g), frozenset({term}))
        for h in have:
            if h in group or (len(term) >= 4 and len(h) >= 4 and (h.startswith(term) or term.startswith(h))):
                return True
    return False


def label_strength(attribute: Attribute, text: str, start: int, end: int) -> int:
    """2: the attribute follows the value or is its toll-free kind; 1: it is on the value's line or the
    line beside it; 0: nothing near the value names the attribute."""
    if attribute.toll_free and _TOLL_FREE.match(text[start:end]):
        return 2
    if attribute.counted:
        after = _TOKEN.findall(text[end : end + 80])[:NEXT_TOKENS]
        if _matches(attribute.terms, lexical.content_terms(" ".join(after))):
            return 2
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    zone = text[max(line_start, start - ZONE_CHARS) : start] + " " + text[end : min(line_end, end + ZONE_CHARS)]
    line = text[line_start:line_end]
    if " | " in line or len(line.strip()) <= FORM_LINE_CHARS:
        # A form's value line: its label is the line above or below ("(IRS Employer Identification No.)").
        above = text.rfind("\n", 0, max(line_start - 1, 0)) + 1 if line_start > 0 else line_start
        below = text.find("\n", line_end + 1) if line_end < len(text) else line_end
        zone += " " + text[above:line_start] + " " + text[line_end : len(text) if below < 0 else below]
    return 1 if _matches(attribute.terms, lexical.content_terms(zone)) else 0
