"""The kind of answer a question asks for: a number, a date, a phone number, a person, a list ...

Read from the question's wording only (its wh-word, the noun it asks about, its auxiliaries),
so it applies to any document. ``FREE`` means no particular shape (why/how questions, facts
told in a phrase). The reader extracts candidate spans of this type and an answer of a typed
question is supported only when it holds one.
"""

from __future__ import annotations

import re
from enum import StrEnum
from functools import lru_cache


class AnswerType(StrEnum):
    NUMBER = "number"
    MONEY = "money"
    PERCENT = "percent"
    DATE = "date"
    PHONE = "phone"
    CODE = "code"
    PERSON = "person"
    ORGANISATION = "organisation"
    PLACE = "place"
    LIST = "list"
    DEFINITION = "definition"
    YES_NO = "yes_no"
    FREE = "free"


TYPED = frozenset({AnswerType.NUMBER, AnswerType.MONEY, AnswerType.PERCENT, AnswerType.DATE, AnswerType.PHONE,
                   AnswerType.CODE, AnswerType.PERSON, AnswerType.ORGANISATION, AnswerType.PLACE})
"""Types whose answer must be a span of that shape (the others are phrases, sentences or lists)."""
NAMED = frozenset({AnswerType.PERSON, AnswerType.ORGANISATION, AnswerType.PLACE})
"""Typed by named-entity recognition, which misses lowercase and descriptive names: a sentence without
such an entity may still answer (the reader then treats it as untyped)."""

_I = re.I
_RULES: list[tuple[re.Pattern[str], AnswerType]] = [
    (re.compile(r"\b(?:phone|telephone|tel|fax|facsimile|toll[- ]free|hotline|helpline)\b", _I), AnswerType.PHONE),
    (re.compile(r"\b(?:stand\s+for|abbreviat\w*|acronym|what\s+is\s+meant\s+by|meaning\s+of|define|definition\s+of)\b"
                r"|\bwhat\s+(?:is|are)\s+.{0,60}\bcalled\b", _I), AnswerType.DEFINITION),
    (re.compile(r"\b(?:percent(?:age)?|per\s+cent|%|what\s+share|what\s+proportion)\b", _I), AnswerType.PERCENT),
    (re.compile(r"\bhow\s+much\b.{0,80}\b(?:cost|costs|pay|paid|spend|spent|charge|charged|worth|price|fee|earn)\w*\b"
                r"|\bwhat\s+(?:is|was|were|are)\s+the\s+(?:price|cost|fee|salary|fine|budget)\b"
                r"|\bhow\s+much\s+money\b", _I), AnswerType.MONEY),
    (re.compile(r"\bwhen\b|\b(?:what|which)\s+(?:year|date|day|month|century|decade|time|period)\b"
                r"|\bin\s+what\s+year\b|\bhow\s+long\s+ago\b", _I), AnswerType.DATE),
    (re.compile(r"\b(?:what|which)\s+(?:is|was|are)\s+(?:the\s+|its\s+|their\s+)?[\w'’\s-]{0,60}?"
                r"\b(?:number|no\.?|id|identifier|code|symbol|ticker|version|serial|reference)\s*\??$"
                r"|\b(?:what|which)\s+(?:version|code|ticker|symbol|identifier|serial|model\s+number)\b"
                r"|\b(?:ticker|trading)\s+symbol\b|\bcase\s+number\b", _I), AnswerType.CODE),
    (re.compile(r"\bhow\s+(?:many|much|far|long|old|big|large|tall|high|heavy|often)\b"
                r"|\bwhat\s+(?:number|amount|quantity|total|count)\b|\bnumber\s+of\b"
                r"|^\s*(?:what|which)\s+[a-z]+\s+number\b", _I), AnswerType.NUMBER),
    (re.compile(r"^\s*(?:who|whom)\b|\bwho(?:m|se)?\b|\b(?:what|which)\s+(?:person|people|author|authors|man|woman|"
                r"manager|director|president|chair\w*|officer|player|writer|artist|founder|inventor)\b", _I),
     AnswerType.PERSON),
    (re.compile(r"\b(?:what|which)\s+(?:company|companies|organi[sz]ation|agency|firm|bank|university|team|club|"
                r"institution|department|ministry|group|publisher|broadcaster)\b", _I), AnswerType.ORGANISATION),
    (re.compile(r"\bwhere\b|\b(?:what|which)\s+(?:city|country|state|province|town|place|region|location|address|"
                r"continent|county|venue)\b", _I), AnswerType.PLACE),
    (re.compile(r"^\s*(?:is|are|was|were|does|do|did|can|could|has|have|had|will|would|should|must|may)\b", _I),
     AnswerType.YES_NO),
]

_LIST = re.compile(
    r"\b(?:list|name\s+the|enumerate)\b"
    r"|\b(?:which|what)\s+(?:two|three|four|five|six|seven|eight|nine|ten|\d+)\b"
    r"|\b(?:which|what)\s+(?:\w+\s+){0,2}?(?:are|were)\s+(?:mentioned|listed|named|included|given)\b"
    r"|\bwho\s+are\s+the\b"
    r"|\bwhat\s+(?:items|things|steps|types|kinds|parts|components|packages|members|options|requirements)\b", _I)
_PLURAL_ASK = re.compile(r"^\s*(?:which|what)\s+(?:[a-z]+\s+){0,2}?([a-z]{3,}s)\b(?!\s+(?:is|was|does|did)\b)", _I)
_NOT_PLURAL = frozenset({"is", "was", "does", "this", "its", "has", "class", "process", "business", "address", "status",
                         "analysis", "basis", "series", "species", "news", "access", "success", "less", "bus", "gas",
                         "kinds", "sorts"})


_MANNER = re.compile(r"^\s*(?:why\b|how\s+(?:do|does|did|can|could|should|would|is|are|was|were)\b)", _I)


@lru_cache(maxsize=4096)
def classify(question: str) -> AnswerType:
    """The answer type a question asks for (``FREE`` when it asks for none in particular)."""
    text = " ".join(question.split())
    if _LIST.search(text):
        return AnswerType.LIST
    plural = _PLURAL_ASK.match(text)
    if plural and plural.group(1).lower() not in _NOT_PLURAL and not re.search(r"\bhow\s+(?:many|much)\b", text, _I):
        return AnswerType.LIST
    if _MANNER.match(text):
        return AnswerType.FREE  # "How do you pin down where ...": the wh-word that leads decides
    for pattern, kind in _RULES:
        if pattern.search(text):
            return kind
    return AnswerType.FREE


TYPE_WORDS: dict[AnswerType, frozenset[str]] = {
    AnswerType.PHONE: frozenset({"phone", "telephone", "tel", "fax", "number", "facsimile", "call", "contact"}),
    AnswerType.CODE: frozenset({"number", "no", "id", "identifier", "code", "symbol", "version", "serial", "reference"}),
    AnswerType.DATE: frozenset({"year", "date", "day", "month", "time", "century", "decade", "period"}),
    AnswerType.NUMBER: frozenset({"number", "amount", "total", "count", "many", "much", "quantity"}),
    AnswerType.MONEY: frozenset({"much", "cost", "price", "pay", "paid", "amount", "money"}),
    AnswerType.PERCENT: frozenset({"percent", "percentage", "share", "proportion", "rate"}),
    AnswerType.PERSON: frozenset({"person", "name", "people"}),
    AnswerType.PLACE: frozenset({"city", "country", "place", "location", "town", "state", "region", "address"}),
    AnswerType.ORGANISATION: frozenset({"company", "organisation", "organization", "name"}),
    AnswerType.LIST: frozenset({"items", "item", "things", "list", "types", "kinds", "examples", "names", "members"}),
    AnswerType.DEFINITION: frozenset({"stand", "called", "meaning", "mean", "define", "definition", "abbreviation"}),
}
"""Question words that only name the answer's type ("what fax number"), not a fact it must repeat."""
