"""What a question asks its evidence to hold, as stemmed terms, and how much of it a passage holds.

- ``key_terms``: the question's names and numbers, and its other nouns, less its type words
  ("what *fax number*") and idioms ("in the first place");
- ``category_terms``: the class asked about ("which *backbone*"), which the answer need not repeat;
- ``possessed_terms``: what a possessive names ("Prince Vasili's *daughter*");
- ``source_reference``: a phrase naming the source ("in the DPR paper"), asked of the document;
- ``made_by``: a "who came up with X" question and the person after "developed by";
- ``coverage``: the share of key terms a passage and its context hold (``matched_count`` is fuzzy on
  stems and on two-digit years).
"""

from __future__ import annotations

import re

from services.rag.answers import lexical
from services.rag.answers.answer_types import TYPE_WORDS, AnswerType
from services.rag.answers.spans import noun_terms

_IDIOMS = re.compile(
    r"\b(?:in the first place|(?:take|takes|took|taken|taking) place|in place|at all|after all|in fact|of course"
    r"|in general|in particular|by the way|at first)\b", re.I)
"""Phrases whose nouns say nothing about the answer ("who came up with it in the first place")."""
_POSSESSED = re.compile(r"['’]s?\s+((?:[a-z][\w-]*\s+){0,2}[a-z][\w-]*)", re.I)
"""The thing a possessive asks about ("Prince Vasili's daughter", "the Group's adjusted EBITDA")."""


def key_terms(question: str, kind: AnswerType, source_terms: frozenset[str] = frozenset()) -> tuple[frozenset[str], frozenset[str]]:
    """(names and numbers, other nouns) of the question an answer's evidence must hold, stemmed."""
    type_words = lexical.content_terms(" ".join(TYPE_WORDS.get(kind, ())))
    names, nouns = set[str](), set[str]()
    for word, is_name in noun_terms(_IDIOMS.sub(" ", question)):
        for term in lexical.content_terms(word):
            if term in type_words:
                continue
            (names if is_name else nouns).add(term)
    return frozenset(names - source_terms), frozenset(nouns - names - source_terms)


_CATEGORY = re.compile(
    r"^\s*(?:(?:what|which)(?:'s|\s+(?:is|are|was|were))?\s+(?:the\s+)?(?:(?:kind|type|sort)s?\s+of\s+)?"
    r"|who\s+(?:is|are|was|were)\s+the\s+)([a-z][\w-]*)", re.I)


def category_terms(question: str) -> frozenset[str]:
    """The noun a question asks about ("which backbone", "who are the authors"): the answer's class, which
    the evidence need not repeat (it says "ResNet 101", not "the backbone is ...")."""
    match = _CATEGORY.match(question)
    return lexical.content_terms(match.group(1)) if match else frozenset()


def plural_category(question: str) -> bool:
    match = _CATEGORY.match(question)
    word = match.group(1).lower() if match else ""
    return word.endswith("s") and not word.endswith("ss")


def matched_count(needed: frozenset[str], have: frozenset[str]) -> int:
    count = 0
    for n in needed:
        if n in have or (len(n) >= 4 and any(min(len(n), len(h)) >= 4 and (h.startswith(n) or n.startswith(h))
                                             for h in have)):
            count += 1
        elif _YEAR.fullmatch(n) and n[2:] in have:
            count += 1  # "since 1967" and a sheet named "Since 67"
    return count


_YEAR = re.compile(r"(?:19|20)\d\d")
_MAKING = (r"(?:came up with|come up with|coined|conceived|creat\w*|develop\w*|design\w*|devis\w*|found\w*"
           r"|invent\w*|originat\w*|wr[io]te\w*|written|author\w*|establish\w*|start\w*|buil[dt]\w*|made|make)")
_ASKS_MAKER = re.compile(rf"^\s*who\b.*\b{_MAKING}\b", re.I)
_MADE_BY = re.compile(rf"\b{_MAKING}\s+(?:\w+\s+){{0,2}}by\s*$", re.I)
"""A "who made it" question is answered by the maker: the person after "developed by", "founded by"."""


def made_by(question: str, sentence: str, short_start: int) -> bool:
    return bool(_ASKS_MAKER.search(question)) and bool(_MADE_BY.search(sentence[max(0, short_start - 60):short_start]))


_SOURCE_REFERENCE = re.compile(
    r",?\s*\b(?:in|from|of|according to|as described in)\s+(?:the|this|that)\s+((?:[\w.-]+\s+){0,3}?)"
    r"(?:paper|document|report|article|essay|piece|spec|specification|memo|letter|book|handbook|manual|filing|"
    r"transcript|notice|file|spreadsheet|workbook|presentation|deck|email|e-mail)\b", re.I)
_SOURCE_WORDS = lexical.content_terms("paper document report article essay piece spec specification memo letter book "
                                      "handbook manual filing transcript notice file spreadsheet workbook presentation "
                                      "deck email e-mail")


def source_reference(question: str) -> tuple[str, frozenset[str]]:
    """(the question without the phrase naming its source, that phrase's own terms): "... in the DPR paper" asks
    the document to be the DPR paper, not the answer's passage to say "DPR" or "paper"."""
    match = _SOURCE_REFERENCE.search(question)
    if match is None:
        return question, frozenset()
    rest = f"{question[:match.start()]}{question[match.end():]}"
    return " ".join(rest.split()), lexical.content_terms(match.group(1)) - _SOURCE_WORDS


def possessed_terms(question: str) -> frozenset[str]:
    """Content terms of what a possessive in the question names ("Prince Vasili's *daughter*")."""
    found = frozenset[str]()
    for match in _POSSESSED.finditer(question):
        words = []
        for word in match.group(1).split():
            if word.lower() in lexical.stop_words() or word.lower() in lexical.QUESTION_WORDS:
                break
            words.append(word)
        found |= lexical.content_terms(" ".join(words))
    return found


def coverage(question: str, kind: AnswerType, evidence: str, context: str, chunk_text: str) -> tuple[float, bool]:
    """(share of key nouns held by evidence + context, all names and numbers held by the chunk + context)."""
    source = lexical.content_terms(context)
    names, nouns = key_terms(question, kind, source)
    have = lexical.content_terms(evidence) | source
    chunk = lexical.content_terms(chunk_text) | source
    # A name the question gives (the company, the paper) is the passage's subject: its chunk naming it is enough.
    noun_share = (matched_count(nouns, have) + matched_count(names, chunk)) / len(nouns | names) if nouns | names else 1.0
    return noun_share, matched_count(names, chunk) == len(names)
