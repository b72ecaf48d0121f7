"""Text statistics: counts, reading time, Flesch reading ease, lexical diversity, keywords."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from services.vocabulary.text import STOPWORDS, paragraphs, sentence_spans, words

READING_WPM = 250


@dataclass(frozen=True)
class Analytics:
    characters: int
    words: int
    sentences: int
    paragraphs: int
    reading_time_minutes: float
    flesch_reading_ease: float
    lexical_diversity: float
    average_sentence_length: float
    top_keywords: list[tuple[str, int]]


_VOWEL_GROUPS = re.compile(r"[aeiouy]+")


def syllables(word: str) -> int:
    """Heuristic English syllable count (vowel groups, silent trailing e), at least 1."""
    w = word.lower()
    if len(w) <= 3:
        return 1
    if w.endswith("e") and not w.endswith(("le", "ee")):
        w = w[:-1]
    return max(1, len(_VOWEL_GROUPS.findall(w)))


def compute(text: str, top_keywords: int = 10) -> Analytics:
    tokens = words(text)
    n_words = len(tokens)
    n_sentences = len(sentence_spans(text))
    n_paragraphs = len(paragraphs(text))
    lowered = [t.lower() for t in tokens]
    if n_words and n_sentences:
        syl = sum(syllables(t) for t in tokens)
        flesch = 206.835 - 1.015 * (n_words / n_sentences) - 84.6 * (syl / n_words)
    else:
        flesch = 0.0
    keywords = Counter(t for t in lowered if len(t) > 3 and t not in STOPWORDS and not t.isdigit())
    return Analytics(
        characters=len(text),
        words=n_words,
        sentences=n_sentences,
        paragraphs=n_paragraphs,
        reading_time_minutes=round(n_words / READING_WPM, 2),
        flesch_reading_ease=round(flesch, 2),
        lexical_diversity=round(len(set(lowered)) / n_words, 4) if n_words else 0.0,
        average_sentence_length=round(n_words / n_sentences, 2) if n_sentences else 0.0,
        top_keywords=sorted(keywords.items(), key=lambda kv: (-kv[1], kv[0]))[:top_keywords],
    )


def ceil_minutes(analytics: Analytics) -> int:
    """The seed's whole-minute reading time (ceil(words / 250))."""
    return math.ceil(analytics.words / READING_WPM)
