"""Analytics against hand-counted values."""

from __future__ import annotations

import pytest

from services.vocabulary.analytics import ceil_minutes, compute, syllables

# 12 words, 3 sentences, 2 paragraphs. Syllables (heuristic, counted by hand):
# The1 cat1 sat1 on1 the1 mat1 It1 was1 happy2 Dogs1 bark1 loudly2 = 14.
TEXT = "The cat sat on the mat. It was happy!\n\nDogs bark loudly."


def test_counts_equal_hand_counted_values():
    result = compute(TEXT)
    assert result.characters == 56
    assert result.words == 12
    assert result.sentences == 3
    assert result.paragraphs == 2
    assert result.average_sentence_length == 4.0
    assert result.reading_time_minutes == 0.05  # 12 / 250 = 0.048
    assert result.lexical_diversity == round(11 / 12, 4)  # "the" twice
    assert result.flesch_reading_ease == round(206.835 - 1.015 * (12 / 3) - 84.6 * (14 / 12), 2)
    # Keywords: longer than three letters, no stopwords; ties alphabetical.
    assert result.top_keywords == [("bark", 1), ("dogs", 1), ("happy", 1), ("loudly", 1)]


def test_keyword_counts_and_limit():
    text = "Solar power. Solar panels and solar farms. Wind power and wind farms."
    assert compute(text, top_keywords=3).top_keywords == [("solar", 3), ("farms", 2), ("power", 2)]


def test_reading_time_at_250_words_per_minute():
    result = compute(" ".join(["word"] * 500) + ".")
    assert result.reading_time_minutes == 2.0 and ceil_minutes(result) == 2


@pytest.mark.parametrize(("word", "count"), [("cat", 1), ("happy", 2), ("loudly", 2), ("make", 1), ("table", 2)])
def test_syllable_heuristic(word, count):
    assert syllables(word) == count
