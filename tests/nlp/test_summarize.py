"""Extractive summaries with the real MiniLM embedder; abstractive ones through a scripted LLM."""

from __future__ import annotations

import json

import numpy as np
import pytest

from services.nlp.prepared import PreparedText
from services.nlp.summarize import Limits, Style, extractive, summarize
from services.runtime.errors import InvalidArgument
from services.vocabulary.text import words

from .documents import NEAR_DUPLICATES, OFF_TOPIC, SOLAR
from .fakes import NoProviders, ScriptedGenerator

pytestmark = pytest.mark.models  # the real spaCy pipeline


@pytest.fixture(scope="module")
def solar() -> PreparedText:
    prepared = PreparedText(SOLAR)
    prepared.vectors  # noqa: B018 - embed once for the module
    return prepared


@pytest.mark.parametrize(("max_sentences", "max_words"), [(3, 250), (5, 250), (10, 40), (2, 15)])
def test_extractive_summary_is_verbatim_sentences_in_order_within_bounds(solar, max_sentences, max_words):
    result = extractive(solar, Style.NARRATIVE, Limits(max_sentences, max_words))
    assert 1 <= len(result.sentences) <= max_sentences
    assert sum(len(words(s.text)) for s in result.sentences) <= max_words
    starts = [s.start for s in result.sentences]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    source_sentences = {line.strip() for line in SOLAR.splitlines() if line.strip()}
    for sentence in result.sentences:
        assert SOLAR[sentence.start : sentence.end] == sentence.text
        assert sentence.text in source_sentences
    assert result.summary == " ".join(s.text for s in result.sentences)
    assert result.engine.model == "all-MiniLM-L6-v2-extractive"


def test_summary_leaves_out_the_off_topic_sentence_and_one_of_two_near_duplicates(solar):
    chosen = [s.text for s in extractive(solar, Style.NARRATIVE, Limits(4, 250)).sentences]
    assert OFF_TOPIC not in chosen
    assert not all(d in chosen for d in NEAR_DUPLICATES)


def test_bullets_are_the_same_sentences(solar):
    narrative = extractive(solar, Style.NARRATIVE, Limits(4, 250))
    bullets = extractive(solar, Style.BULLETS, Limits(4, 250))
    assert list(bullets.bullets) == [s.text for s in narrative.sentences]
    assert bullets.sentences == narrative.sentences and narrative.bullets == ()


def test_a_word_budget_below_every_sentence_is_an_invalid_argument(solar):
    with pytest.raises(InvalidArgument) as caught:
        extractive(solar, Style.NARRATIVE, Limits(3, 4))
    assert caught.value.violations[0].field == "max_words"


def test_limits_defaults_and_validation():
    assert Limits.of(0, 0) == Limits(5, 250)
    assert Limits.of(2, 30) == Limits(2, 30)
    with pytest.raises(InvalidArgument):
        Limits.of(-1, 0)


def test_long_documents_embed_a_bounded_sample_that_reaches_the_end():
    text = " ".join(f"Sentence number {i} talks about topic {i % 7} at some length." for i in range(600))
    prepared = PreparedText(text, max_sentences=40, encode=lambda texts: np.eye(len(texts), 8, dtype=np.float32))
    candidates = prepared.candidates
    assert len(candidates) <= 40 + 20  # the quota per stretch rounds up to one
    assert candidates == sorted(candidates)
    assert candidates[-1] >= 570  # the last stretch of the document is represented
    assert candidates[0] < 30


async def test_summarize_without_a_provider_is_extractive(solar):
    result = await summarize(solar, Style.NARRATIVE, Limits(3, 250), NoProviders(), prefer_llm=True, context_chars=6000)
    assert result.engine.model == "all-MiniLM-L6-v2-extractive" and len(result.sentences) == 3


async def test_summarize_with_an_llm_is_abstractive_and_clipped_to_the_word_limit(solar):
    long_answer = "Solar power is getting cheaper. " * 20
    generator = ScriptedGenerator(lambda task, request: long_answer)
    result = await summarize(solar, Style.NARRATIVE, Limits(3, 12), generator, prefer_llm=True, context_chars=6000)
    assert generator.calls[0][0] == "summarize"
    assert SOLAR in generator.calls[0][1].messages[0].content  # short documents go to the LLM whole
    assert (result.engine.provider, result.engine.model) == ("fake", "scripted-1")
    assert result.summary == "Solar power is getting cheaper. Solar power is getting cheaper."
    assert result.sentences == ()


async def test_bullet_summary_from_llm_json_and_fallback_on_garbage(solar):
    good = ScriptedGenerator(lambda t, r: "Sure!\n```json\n" + json.dumps({"bullets": ["Panels got cheaper."]}) + "\n```")
    result = await summarize(solar, Style.BULLETS, Limits(3, 250), good, prefer_llm=True, context_chars=6000)
    assert result.bullets == ("Panels got cheaper.",) and result.engine.provider == "fake"
    garbage = ScriptedGenerator(lambda t, r: "I cannot do that.")
    result = await summarize(solar, Style.BULLETS, Limits(3, 250), garbage, prefer_llm=True, context_chars=6000)
    assert result.engine.model == "all-MiniLM-L6-v2-extractive" and len(result.bullets) == 3


async def test_prefer_llm_false_never_calls_the_provider(solar):
    generator = ScriptedGenerator(lambda t, r: "unused")
    await summarize(solar, Style.NARRATIVE, Limits(), generator, prefer_llm=False, context_chars=6000)
    assert generator.calls == []


def _csv(rows: int) -> str:
    regions, products = ("north", "south", "east", "west"), ("solar panel", "inverter", "battery pack")
    lines = ["region,product,units,revenue,manager"]
    for i in range(rows):
        lines.append(f"{regions[i % 4]},{products[i % 3]},{(i * 37) % 900 + 1},{(i * 7919) % 90000 + 1000},"
                     f"{'Ada Lovelace' if i % 2 else 'Alan Turing'}")
    return "\n".join(lines)


def test_csv_text_without_sentence_punctuation_is_summarised_by_whole_rows():
    text = _csv(90)  # one "sentence" of ~600 words: once SUMMARY_TOO_SHORT at the default 250 words
    result = extractive(PreparedText(text), Style.NARRATIVE, Limits.of(0, 0))
    rows = set(text.splitlines())
    assert 1 <= len(result.sentences) <= 5
    assert sum(len(words(s.text)) for s in result.sentences) <= 250
    for sentence in result.sentences:
        assert text[sentence.start : sentence.end] == sentence.text and sentence.text in rows


def test_a_long_line_without_punctuation_is_cut_at_word_boundaries():
    text = " ".join(f"word{i} value{i}" for i in range(200))  # 400 words, one line, no full stop
    prepared = PreparedText(text)
    assert len(prepared.spans) == 5 and all(len(words(prepared.sentence(i))) <= 80 for i in range(5))
    assert " ".join(prepared.sentence(i) for i in range(5)) == text
    result = extractive(prepared, Style.NARRATIVE, Limits(2, 250))
    assert 1 <= len(result.sentences) <= 2 and all(text[s.start : s.end] == s.text for s in result.sentences)


def test_prose_keeps_its_sentences_and_a_table_block_inside_it_is_not_summary_material(solar):
    row = "panel {} | output {} kilowatt hours | inspected by the maintenance crew"
    table = "\n".join(row.format(i, i * 3) for i in range(12))
    prepared = PreparedText(SOLAR + "\n" + table)
    chosen = {s.text for s in extractive(prepared, Style.NARRATIVE, Limits(5, 250)).sentences}
    assert chosen and not any("|" in s for s in chosen)
