from __future__ import annotations

from services.orchestrator.tokens import (
    RESERVE_FOR_OUTPUT,
    TokenBudget,
    Turn,
    compact_turns,
    estimate_tokens,
    truncate_to_tokens,
)
from services.providers.pricing import load_price_table

BUDGET = TokenBudget(load_price_table())


def test_estimate_is_ceil_chars_over_four():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2


def test_check_against_the_model_window():
    check = BUDGET.check("gpt-3.5-turbo", "s" * 400, [Turn("user", "u" * 4000)])
    assert check.context_window == 16_385
    assert check.available == 16_385 - RESERVE_FOR_OUTPUT
    assert check.used == 100 + 1000
    assert check.allowed and check.overflow == 0 and check.recommendation == ""
    assert check.utilization == round(1100 / check.available, 4)


def test_overflow_and_recommendation():
    big = BUDGET.check("gpt-3.5-turbo", turns=[Turn("user", "x" * 4 * 13_000)])
    assert not big.allowed
    assert big.overflow == 13_000 - (16_385 - RESERVE_FOR_OUTPUT)
    assert "compact" in big.recommendation
    near = BUDGET.check("gpt-3.5-turbo", turns=[Turn("user", "x" * 4 * 11_000)])
    assert near.allowed and "consider compacting" in near.recommendation


def test_tools_count_towards_the_prompt():
    tool = {"name": "t", "description": "d" * 400, "input_schema": {"type": "object"}}
    assert BUDGET.count(tools=[tool]) > 100


async def test_compaction_summarises_older_turns_and_keeps_the_last():
    turns = [Turn("user" if n % 2 == 0 else "assistant", f"turn {n}") for n in range(10)]
    seen: list[str] = []

    async def summarize(text: str) -> str:
        seen.append(text)
        return "SUMMARY"

    summary, kept = await compact_turns(turns, 4, summarize)
    assert summary == "SUMMARY"
    assert [t.content for t in kept] == ["turn 6", "turn 7", "turn 8", "turn 9"]
    assert "user: turn 0" in seen[0] and "turn 5" in seen[0] and "turn 6" not in seen[0]


def test_truncate_cuts_at_a_boundary():
    text = "First paragraph here.\n\nSecond paragraph that is long. " + "word " * 50
    cut = truncate_to_tokens(text, 10)
    assert cut == "First paragraph here."
    assert truncate_to_tokens("short", 10) == "short"
