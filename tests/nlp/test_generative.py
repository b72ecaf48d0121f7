"""Discussion points, recommendations, rewriting and translation through a scripted provider layer."""

from __future__ import annotations

import json

import pytest

from services.nlp import generative, grounding
from services.nlp.generation import parse_json
from services.nlp.prepared import PreparedText
from services.runtime.errors import FailedPrecondition, InvalidArgument, Unavailable

from .documents import MEMO
from .fakes import NoProviders, ScriptedGenerator

pytestmark = pytest.mark.models  # the real spaCy pipeline


@pytest.fixture(scope="module")
def memo() -> grounding.Grounding:
    return grounding.build(PreparedText(MEMO))


def test_grounding_finds_directives_with_priorities(memo):
    directives = dict(memo.directives)
    assert directives["We must fix the billing bug that charged some customers twice."] == 1
    assert directives["The team should hire two more support agents before the holiday season."] == 2
    assert directives["Management could consider a loyalty discount for long-term customers."] == 3
    assert 3 <= len(memo.ideas) <= 5 and memo.summary


async def test_usable_llm_points_are_kept(memo):
    points = [
        "How should the team reduce customer churn after the price increase?",
        "Which support tickets could be prevented by fixing the billing bug?",
        "Is a loyalty discount worth its cost for long-term customers?",
    ]
    generator = ScriptedGenerator(lambda t, r: json.dumps({"points": points}))
    result = await generative.discussion_points(MEMO, memo, generator, context_chars=6000)
    assert result.points == tuple(points) and result.engine.model == "scripted-1"
    task, request = generator.calls[0]
    assert task == "discussion_points" and request.json_schema is not None
    prompt = request.messages[0].content
    assert memo.ideas[0] in prompt and "Summary:" in prompt  # grounded in the summary and key ideas


async def test_weak_model_output_falls_back_to_grounded_questions(memo):
    rambling = "1. Hello! I am a helpful assistant.\n2. The sky is blue.\n3. What is the capital of France?"
    result = await generative.discussion_points(MEMO, memo, ScriptedGenerator(lambda t, r: rambling), context_chars=6000)
    assert (result.engine.provider, result.engine.model) == ("local", "grounded-template")
    assert len(result.points) == len(memo.ideas)
    for point, idea in zip(result.points, memo.ideas):
        assert point.endswith("?") and idea.rstrip(".") in point


async def test_points_parsed_from_a_plain_list_when_json_is_missing(memo):
    listing = (
        "- Why did customer churn rise after the price increase?\n"
        "- How quickly can the billing bug be fixed?\n"
        "* Would more support agents shorten response times?"
    )
    result = await generative.discussion_points(MEMO, memo, ScriptedGenerator(lambda t, r: listing), context_chars=6000)
    assert result.engine.model == "scripted-1" and len(result.points) == 3


async def test_recommendations_from_json_sorted_by_priority(memo):
    answer = {
        "recommendations": [
            {"recommendation": "Offer a loyalty discount to long-term customers", "rationale": "Churn rose", "priority": "low"},
            {"recommendation": "Fix the billing bug immediately", "rationale": "Customers were charged twice", "priority": "high"},
        ]
    }
    result = await generative.recommendations(MEMO, memo, ScriptedGenerator(lambda t, r: json.dumps(answer)), context_chars=6000)
    assert [a.priority for a in result.items] == [1, 3]
    assert result.items[0].recommendation == "Fix the billing bug immediately"


async def test_recommendations_fall_back_to_the_documents_directives(memo):
    for generator in (ScriptedGenerator(lambda t, r: '{"recommendations": []}'), NoProviders()):
        result = await generative.recommendations(MEMO, memo, generator, context_chars=6000)
        assert result.engine.model == "grounded-template"
        assert [a.priority for a in result.items] == [1, 2, 3]
        assert result.items[0].recommendation == "We must fix the billing bug that charged some customers twice."


async def test_rewrite_goes_out_in_windows_and_joins_the_answers():
    text = "\n\n".join(f"Paragraph {i} is written in a casual way, ok." for i in range(30))
    generator = ScriptedGenerator(lambda t, r: f"<text>REWRITTEN {len(r.messages[0].content)}</text>")
    result = await generative.rewrite(text, "formal", generator, window_chars=600, max_chars=10_000)
    assert len(generator.calls) == len(result.text.split("\n\n")) > 1
    assert all(task == "rewrite" and "formal" in req.messages[0].content for task, req in generator.calls)
    assert "<text>" not in result.text and result.instruction == "formal"
    sent = "".join(req.messages[0].content for _, req in generator.calls)
    assert all(f"Paragraph {i} " in sent for i in range(30))  # nothing lost, the end included


async def test_rewrite_style_defaults_and_limits():
    generator = ScriptedGenerator(lambda t, r: "Fine.")
    assert (await generative.rewrite("ok", "", generator, window_chars=600, max_chars=100)).instruction == "clear and concise"
    with pytest.raises(InvalidArgument):
        await generative.rewrite("ok", "x" * 201, generator, window_chars=600, max_chars=100)
    with pytest.raises(InvalidArgument) as caught:
        await generative.rewrite("x" * 101, "formal", generator, window_chars=600, max_chars=100)
    assert caught.value.metadata["limit"] == "100"


async def test_translation_needs_a_provider_and_a_language():
    with pytest.raises(FailedPrecondition) as caught:
        await generative.translate("Bonjour", "English", NoProviders(), window_chars=600, max_chars=100)
    assert "ANTHROPIC_API_KEY" in caught.value.message
    with pytest.raises(InvalidArgument):
        await generative.translate("Bonjour", " ", NoProviders(), window_chars=600, max_chars=100)
    done = await generative.translate("Hello", "fr", ScriptedGenerator(lambda t, r: "Bonjour"), window_chars=600, max_chars=100)
    assert (done.text, done.instruction) == ("Bonjour", "fr")


async def test_an_empty_generation_is_unavailable():
    with pytest.raises(Unavailable):
        await generative.rewrite("Some text.", "formal", ScriptedGenerator(lambda t, r: "  "), window_chars=600, max_chars=100)


def test_parse_json_finds_the_first_valid_value():
    from pydantic import BaseModel

    class Points(BaseModel):
        points: list[str]

    assert parse_json('noise {"x": 1} then {"points": ["a"]}', Points).points == ["a"]
    assert parse_json('```json\n["a", "b"]\n```', Points).points == ["a", "b"]  # a bare list for one field
    assert parse_json("no json here", Points) is None


async def test_parroted_or_repeated_recommendations_are_not_usable(memo):
    sentence = "The team should hire two more support agents before the holiday season."
    parrot = {"recommendations": [{"recommendation": sentence, "rationale": sentence, "priority": "high"}] * 4}
    result = await generative.recommendations(MEMO, memo, ScriptedGenerator(lambda t, r: json.dumps(parrot)), context_chars=6000)
    assert result.engine.model == "grounded-template"


def test_quoted_speech_is_no_directive_and_quotes_are_not_doubled():
    text = (
        '"I must put in an appearance there," said the prince. "Well, Prince, so Genoa and Lucca are now family estates." '
        "The council should publish the budget before the vote."
    )
    ground = grounding.build(PreparedText(text))
    assert [d for d, _ in ground.directives] == ["The council should publish the budget before the vote."]
    assert not any('""' in q for q in grounding.fallback_questions(ground))
