"""Lexical evidence: content terms (stemmed, stop words removed), coverage, numbers and negation.

Used next to embedding similarity because MiniLM alone happily matches "founded in 1998"
with "founded in 2001": exact terms and numbers are what a reader checks first.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_NEGATION = frozenset({"not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without", "cannot"})
_CAMEL = re.compile(r"\b[A-Za-z][a-z]+(?:[A-Z][a-z]+)+\b")
"""Column and code names ("SpearmanCorrelationCoefficient", "sepalWidth") also count as their words."""
_CAMEL_PART = re.compile(r"[A-Z]?[a-z]+")
QUESTION_WORDS = frozenset({"what", "which", "who", "whom", "whose", "when", "where", "why", "how", "does", "did", "do"})

_stem_lock = threading.Lock()


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    # Negations carry meaning for support checks; numbers words are kept as content.
    return frozenset(STOP_WORDS) - _NEGATION - {"first", "second", "third", "one", "two", "three"}


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    with _stem_lock:
        return _stemmer().stemWord(word)


# Answering one question looks at the same sentences, windows and chunks many times (features
# per candidate, per chunk, per pool): caching both cut a warm query's CPU time by about 40%.
@lru_cache(maxsize=16384)
def _tokens(text: str) -> tuple[str, ...]:
    return tuple(fold(m.group(0).lower().replace("’", "'")) for m in _WORD.finditer(text))


@lru_cache(maxsize=65536)
def fold(word: str) -> str:
    """Accents dropped, so "GéoGratis" and "GeoGratis", "Müller" and "Muller" are the same word."""
    return word if word.isascii() else _unaccented(word)


def _unaccented(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def tokens(text: str) -> list[str]:
    return list(_tokens(text))


@lru_cache(maxsize=16384)
def content_terms(text: str) -> frozenset[str]:
    """Stemmed words that carry meaning (no stop words, no question words)."""
    stop = stop_words()
    plain = text if text.isascii() else _unaccented(text)
    words = [*_tokens(text), *(part.lower() for camel in _CAMEL.findall(plain) for part in _CAMEL_PART.findall(camel))]
    return frozenset(_stem(t.split("'")[0]) for t in words if t not in stop and t not in QUESTION_WORDS)


def coverage(needed: frozenset[str], available: Iterable[str] | frozenset[str]) -> float:
    """Share of ``needed`` terms present in ``available`` (1.0 when nothing is needed)."""
    if not needed:
        return 1.0
    have = available if isinstance(available, frozenset) else frozenset(available)
    return len(needed & have) / len(needed)


def numbers(text: str) -> frozenset[str]:
    return frozenset(n.replace(",", "") for n in _NUMBER.findall(text))


def negated(text: str) -> bool:
    return any(t in _NEGATION or t.endswith("n't") for t in _tokens(text))
