"""Rule planner (offline) and the LLM planner's fallback."""

from __future__ import annotations

import pytest

from services.providers.base import GenerationResult, TextBlock, Usage
from services.rag.agents.planner import Planner, rule_plan
from services.runtime.errors import Unavailable


@pytest.mark.parametrize("message", ["Hello!", "hi there", "Thanks so much!", "How are you?", "good morning"])
def test_greetings_do_not_retrieve(message):
    plan = rule_plan(message)
    assert not plan.needs_retrieval and plan.sub_queries == ()


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("What is X and who founded Y?", ("What is X?", "Who founded Y?")),
        ("1. What is the capital? 2. Who is the mayor?", ("What is the capital?", "Who is the mayor?")),
        ("What is the warranty period; also, where is the factory?", ("What is the warranty period?", "Where is the factory?")),
        ("When did it open? Who runs it?", ("When did it open?", "Who runs it?")),
        ("Who wrote the report and when was it published?", ("Who wrote the report?", "When was it published?")),
    ],
)
def test_multi_part_questions_are_split(message, expected):
    plan = rule_plan(message)
    assert plan.needs_retrieval and plan.sub_queries == expected


@pytest.mark.parametrize("message", [
    "What is the file system: ext4?", "What are the pros and cons of ext4?", "Tell me about salt and pepper",
    "hello, what is the warranty?", "Compare the revenue of 2020 and 2021",
])
def test_single_questions_stay_whole(message):
    assert rule_plan(message).sub_queries == (message[0].upper() + message[1:],)


class Generator:
    def __init__(self, outcome):
        self.outcome = outcome

    async def generate(self, task, request):
        assert task == "plan" and request.json_schema is not None
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return GenerationResult([TextBlock(self.outcome)], Usage(), "openai", "gpt-test")


async def test_llm_planner_is_used_when_a_provider_serves_it():
    planner = Planner(lambda: Generator('{"needs_retrieval": true, "sub_queries": ["A?", "B?"]}'))
    plan = await planner.plan("A and B")
    assert plan.sub_queries == ("A?", "B?") and plan.planner == "openai"


@pytest.mark.parametrize("outcome", [Unavailable("down"), "not json", '{"sub_queries": 3}'])
async def test_llm_planner_failures_fall_back_to_rules(outcome):
    plan = await Planner(lambda: Generator(outcome)).plan("What is X and who founded Y?")
    assert plan.planner == "rules" and plan.sub_queries == ("What is X?", "Who founded Y?")


async def test_planner_without_provider_uses_rules():
    plan = await Planner(lambda: Generator("{}"), can_generate=lambda: False).plan("Hi!")
    assert plan.planner == "rules" and not plan.needs_retrieval
