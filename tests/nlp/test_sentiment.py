"""VADER sentiment: signs on clear texts, thresholds, per-sentence offsets, document aggregation."""

from __future__ import annotations

import pytest

from services.nlp.sentiment import Label, analyze, label_of, margin


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("I love this product. It is wonderful, and the support team was fantastic!", Label.POSITIVE),
        ("This is terrible. The service was awful, slow and rude, and I hate it.", Label.NEGATIVE),
        ("The meeting is scheduled for Tuesday at 3 pm in room 204.", Label.NEUTRAL),
    ],
)
def test_sign_of_clear_texts(text, label):
    result = analyze(text)
    assert result.overall.label is label
    if label is Label.POSITIVE:
        assert result.overall.score >= 0.5
    elif label is Label.NEGATIVE:
        assert result.overall.score <= -0.5
    else:
        assert result.overall.score == 0.0 and result.overall.confidence == 1.0
    assert result.engine.provider == "vader" and result.engine.model == "vaderSentiment-3.3.2"


def test_per_sentence_labels_and_offsets():
    text = "The food was excellent. The waiter was rude and the bill was wrong. We left at nine."
    result = analyze(text)
    assert [s.sentiment.label for s in result.sentences] == [Label.POSITIVE, Label.NEGATIVE, Label.NEUTRAL]
    for sentence in result.sentences:
        assert text[sentence.start : sentence.end] == sentence.text
        assert -1.0 <= sentence.sentiment.score <= 1.0
        assert 0.0 <= sentence.sentiment.confidence <= 1.0


def test_document_score_is_the_word_weighted_mean_of_sentences():
    text = "Great. This long sentence is quite bad and disappointing in almost every single way."
    result = analyze(text)
    first, second = result.sentences
    expected = (first.sentiment.score * 1 + second.sentiment.score * 13) / 14  # 1 and 13 words
    assert result.overall.score == pytest.approx(expected, abs=1e-3)
    assert result.overall.label is Label.NEGATIVE


def test_thresholds_follow_vader():
    assert label_of(0.05) is Label.POSITIVE and label_of(0.0499) is Label.NEUTRAL
    assert label_of(-0.05) is Label.NEGATIVE and label_of(-0.0499) is Label.NEUTRAL
    assert margin(1.0) == 1.0 and margin(0.05) == 0.0 and margin(0.0) == 1.0
    assert margin(-0.525) == pytest.approx(0.5)
