"""Windows cover long texts exactly; sentence offsets index the input."""

from __future__ import annotations

import pytest

from services.nlp import windows
from services.vocabulary.text import sentence_spans, sentences


def _paragraphs(n: int) -> str:
    return "\n\n".join(f"Paragraph {i} says something. It has a second sentence here." for i in range(n))


@pytest.mark.parametrize("max_chars", [40, 100, 333, 5_000])
def test_windows_cover_the_text_without_gaps_or_overlap(max_chars):
    text = _paragraphs(60) + " The very end."
    parts = windows.split(text, max_chars)
    assert parts[0].start == 0 and parts[-1].end == len(text)
    assert all(a.end == b.start for a, b in zip(parts, parts[1:]))
    assert all(0 < w.end - w.start <= max_chars for w in parts)
    assert "".join(w.of(text) for w in parts) == text


def test_windows_prefer_paragraph_then_sentence_boundaries():
    text = _paragraphs(10)
    for window in windows.split(text, 200)[:-1]:
        assert window.of(text).endswith("\n\n")
    prose = "One sentence here. " * 40
    for window in windows.split(prose, 100)[:-1]:
        assert window.of(prose).endswith(". ")


def test_a_text_without_boundaries_is_cut_hard():
    text = "x" * 250
    assert [(w.start, w.end) for w in windows.split(text, 100)] == [(0, 100), (100, 200), (200, 250)]


def test_short_text_is_one_window():
    assert [(w.start, w.end) for w in windows.split("Hi.", 100)] == [(0, 3)]


def test_sentences_keep_closing_quotes_citations_and_abbreviations():
    text = 'He said "Yes." Mr. Smith scored.[12] J. Doe left!\n\nA new paragraph without a stop\n\nEnd?'
    assert sentences(text) == [
        'He said "Yes."',
        "Mr. Smith scored.[12]",
        "J. Doe left!",
        "A new paragraph without a stop",
        "End?",
    ]
    for start, end in sentence_spans(text):
        assert text[start:end] == text[start:end].strip()


def test_leading_citation_markers_belong_to_no_sentence():
    text = "It ended. [13] Roberts broke through."
    assert sentences(text) == ["It ended.", "Roberts broke through."]
