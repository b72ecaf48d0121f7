"""Typed candidate spans of a text: phone numbers, money, dates, codes, names ... with exact offsets.

Patterns find what has a fixed shape (phone and fax numbers, amounts, percentages, codes and
identifiers, dates, acronym expansions); spaCy's entities (``en_core_web_sm``) find names of
people, organisations and places and the dates and quantities patterns miss. Every span
satisfies ``text[start:end] == span.text``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.rag.answers.answer_types import AnswerType
from services.rag.answers.spans import entity_spans

_PHONE = re.compile(
    r"(?<![\w-])(?:\+\s?\d{1,3}[\s.-]?)?(?:\(\s*\d{2,4}\s*\)\s*|\d{1,4}[\s.-])?\d{2,4}[\s.-]\d{3,4}(?:[\s.-]\d{3,4})?(?![\w-])")
_MONEY = re.compile(
    r"(?:[$£€¥₹]|\b(?:USD|EUR|GBP|CAD|US\$|C\$)\s?)\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:million|billion|thousand|m|bn|k)\b)?"
    r"|\b\d[\d,]*(?:\.\d+)?\s?(?:million\s|billion\s)?(?:dollars|pounds|euros|cents|yen)\b", re.I)
_PERCENT = re.compile(r"\b\d+(?:[.,]\d+)?\s?(?:%|percent\b|per\s+cent\b)", re.I)
_MONTH = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
_DATE = re.compile(
    rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?\s+\d{{4}}\b"
    rf"|\b{_MONTH}\s+\d{{4}}\b|\b\d{{4}}-\d{{2}}(?:-\d{{2}})?\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b"
    r"|\b(?:1[5-9]|20)\d{2}\b")
_NUMBER = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s(?:million|billion|thousand|hundred))?(?![\w])"
    r"|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred)\b", re.I)
_CODE = re.compile(
    r"(?<![\w.-])(?=[\w.-]*\d)[A-Za-z0-9]+(?:[.\-/][A-Za-z0-9]+)+(?![\w-])"  # 07-1315, 20-8143439, 0.31.2
    r"|(?<![\w-])[A-Z]{2,6}(?![\w-])"  # GLXZ
    r"|(?<![\w-])(?=[A-Z]*\d)(?=\d*[A-Z])[A-Z0-9]{3,}(?![\w-])")  # A320, 3M14
_ACRONYM_LETTERS = re.compile(r"\b[A-Z][A-Za-z]*[A-Z][A-Za-z]*\b")

_ENTITY_LABELS: dict[AnswerType, frozenset[str]] = {
    AnswerType.PERSON: frozenset({"PERSON"}),
    AnswerType.ORGANISATION: frozenset({"ORG", "NORP", "LAW", "FAC"}),
    AnswerType.PLACE: frozenset({"GPE", "LOC", "FAC"}),
    AnswerType.DATE: frozenset({"DATE", "TIME"}),
    AnswerType.NUMBER: frozenset({"CARDINAL", "QUANTITY", "MONEY", "PERCENT"}),
    AnswerType.MONEY: frozenset({"MONEY"}),
    AnswerType.PERCENT: frozenset({"PERCENT"}),
}
_PATTERNS: dict[AnswerType, tuple[re.Pattern[str], ...]] = {
    AnswerType.PHONE: (_PHONE,),
    AnswerType.MONEY: (_MONEY,),
    AnswerType.PERCENT: (_PERCENT,),
    AnswerType.DATE: (_DATE,),
    AnswerType.NUMBER: (_MONEY, _PERCENT, _NUMBER),
    AnswerType.CODE: (_CODE,),
}


@dataclass(frozen=True)
class TypedSpan:
    start: int
    end: int
    text: str
    kind: AnswerType


def _is_phone(text: str) -> bool:
    digits = sum(ch.isdigit() for ch in text)
    return 7 <= digits <= 15 and not re.fullmatch(r"\d{4}-\d{2}(?:-\d{2})?", text.strip())


SETTLEMENTS = frozenset({"GPE"})
"""Entity labels of a city, town, country or state (a street address or a building is not one)."""


def typed_spans(text: str, kind: AnswerType, labels: frozenset[str] | None = None) -> list[TypedSpan]:
    """Spans of ``text`` of the asked-for type, in text order, without duplicates (``labels`` narrows the
    entity labels that count)."""
    found: dict[tuple[int, int], TypedSpan] = {}
    for pattern in _PATTERNS.get(kind, ()):
        for m in pattern.finditer(text):
            value = m.group(0).strip()
            if not value or (kind is AnswerType.PHONE and not _is_phone(value)):
                continue
            start = m.start() + (len(m.group(0)) - len(m.group(0).lstrip()))
            found.setdefault((start, start + len(value)), TypedSpan(start, start + len(value), value, kind))
    labels = _ENTITY_LABELS.get(kind, frozenset()) if labels is None else labels
    if labels:
        for label, start, end in entity_spans(text):
            if label in labels:
                found.setdefault((start, end), TypedSpan(start, end, text[start:end], kind))
    if kind is AnswerType.CODE:
        found = {k: v for k, v in found.items() if not _DATE.fullmatch(v.text) or "-" in v.text}
    # Reference markers ("[42]") are not values.
    found = {k: v for k, v in found.items() if not (text[v.start - 1 : v.start] == "[" and text[v.end : v.end + 1] == "]")}
    spans = sorted(found.values(), key=lambda s: (s.start, -s.end))
    kept: list[TypedSpan] = []
    for span in spans:  # keep the longest of overlapping spans
        if kept and span.start < kept[-1].end:
            if span.end - span.start > kept[-1].end - kept[-1].start:
                kept[-1] = span
            continue
        kept.append(span)
    return kept


def acronym_expansion(text: str, acronym: str) -> TypedSpan | None:
    """The words whose initials spell ``acronym`` ("LRM" -> "Linear Reference Method"), nearest to it."""
    letters = [ch.lower() for ch in acronym if ch.isalpha()]
    if len(letters) < 2:
        return None
    words = list(re.finditer(r"[A-Za-z][A-Za-z'-]*", text))
    at = [m.start() for m in re.finditer(rf"(?<!\w){re.escape(acronym)}(?!\w)", text)]
    best: tuple[int, TypedSpan] | None = None
    small = {"of", "the", "and", "for", "in", "on", "to", "a", "an"}
    for i in range(len(words)):
        j, k = i, 0
        while j < len(words) and k < len(letters):
            w = words[j].group(0)
            if w.lower().startswith(letters[k]) and w != acronym:
                k += 1
                j += 1
            elif w.lower() in small and j > i:
                j += 1
            else:
                break
        if k == len(letters) and words[i].group(0).lower() not in small:
            start, end = words[i].start(), words[j - 1].end()
            distance = min((abs(a - start) for a in at), default=len(text))
            if best is None or distance < best[0]:
                best = (distance, TypedSpan(start, end, text[start:end], AnswerType.DEFINITION))
    return best[1] if best and best[0] < 200 else None


_ASKED_ACRONYM = re.compile(r"\b(?:does|do|is|did)\s+(?:the\s+)?(?:term\s+|abbreviation\s+|acronym\s+)?[\"'“‘]?([A-Z][A-Za-z]*[A-Z])[\"'”’]?"
                            r"\s+(?:stand|mean)", re.I)


def acronyms_in(question: str) -> list[str]:
    """The acronyms a definition question asks about: the one it asks to expand ("What does ICT stand for in
    the DPR paper?" asks about ICT only), else every acronym it names."""
    asked = _ASKED_ACRONYM.search(question)
    if asked and asked.group(1).isupper():
        return [asked.group(1)]
    return [m.group(0) for m in _ACRONYM_LETTERS.finditer(question) if m.group(0).isupper() and len(m.group(0)) <= 8]
