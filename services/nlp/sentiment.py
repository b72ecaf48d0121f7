"""Lexicon sentiment (VADER) per sentence and per document.

Labels use VADER's published thresholds on the compound score: >= 0.05 positive,
<= -0.05 negative, neutral in between. The document score is the word-weighted mean of
the sentence scores: VADER's compound saturates towards +-1 on long texts, so scoring the
whole text at once would call any long report "very positive".
Confidence is how far the score lies past the label's decision boundary, blended (for
the document) with how many sentences agree with the document's label.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from services.clients.results import Engine
from services.nlp import engines
from services.vocabulary.text import sentence_spans, words

THRESHOLD = 0.05


class Label(Enum):
    POSITIVE = "positive"
    NEUTRAL = "neutral"
    NEGATIVE = "negative"


@dataclass(frozen=True)
class Sentiment:
    label: Label
    score: float
    """-1 (most negative) .. 1 (most positive)."""
    confidence: float
    """0..1."""


@dataclass(frozen=True)
class SentenceSentiment:
    text: str
    start: int
    end: int
    sentiment: Sentiment


@dataclass(frozen=True)
class SentimentResult:
    overall: Sentiment
    sentences: tuple[SentenceSentiment, ...]
    engine: Engine


def label_of(score: float) -> Label:
    if score >= THRESHOLD:
        return Label.POSITIVE
    if score <= -THRESHOLD:
        return Label.NEGATIVE
    return Label.NEUTRAL


def margin(score: float) -> float:
    """0..1: how far ``score`` lies past its label's boundary (1 at the extremes or at exactly 0)."""
    label = label_of(score)
    if label is Label.NEUTRAL:
        return 1.0 - abs(score) / THRESHOLD
    return (abs(score) - THRESHOLD) / (1.0 - THRESHOLD)


def _sentiment(score: float, confidence: float) -> Sentiment:
    return Sentiment(label_of(score), round(score, 4), round(min(1.0, max(0.0, confidence)), 4))


@lru_cache(maxsize=1)
def _analyzer():
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


_lock = threading.Lock()


def analyze(text: str) -> SentimentResult:
    with _lock:
        analyzer = _analyzer()
    sentences: list[SentenceSentiment] = []
    weighted = 0.0
    total_words = 0
    for start, end in sentence_spans(text):
        sentence = text[start:end]
        score = analyzer.polarity_scores(sentence)["compound"]
        sentences.append(SentenceSentiment(sentence, start, end, _sentiment(score, margin(score))))
        n = max(1, len(words(sentence)))
        weighted += score * n
        total_words += n
    score = weighted / total_words if total_words else 0.0
    label = label_of(score)
    agreement = sum(s.sentiment.label is label for s in sentences) / len(sentences) if sentences else 1.0
    overall = _sentiment(score, 0.5 * margin(score) + 0.5 * agreement)
    return SentimentResult(overall, tuple(sentences), engines.VADER)
