from __future__ import annotations

import pytest

from services.orchestrator.costs import CostTracker, intent_scope, track_spend
from services.orchestrator.database import Database
from services.providers.base import Usage
from services.providers.pricing import load_price_table
from services.runtime.errors import InvalidArgument, ResourceExhausted

PRICES = load_price_table()


def tracker(db, clock, **kw) -> CostTracker:
    return CostTracker(db, PRICES, clock=clock, **kw)


def test_costs_use_the_real_price_table(db, clock):
    costs = tracker(db, clock)
    # sonnet-4: $3 in / $15 out per million tokens
    cost = costs.record("anthropic", "claude-sonnet-4-20250514", Usage(1_000_000, 100_000))
    assert cost == pytest.approx(3.0 + 1.5)
    # a caller-priced call keeps its own price
    assert costs.record("openai", "gpt-4o-mini", Usage(10, 10, cost_usd=0.25)) == 0.25


def test_report_groups_by_provider_and_intent_per_period(db, clock):
    costs = tracker(db, clock)
    with intent_scope("chat.document"):
        costs.record("openai", "gpt-4o-mini", Usage(1_000_000, 0))  # $0.15
    costs.record("anthropic", "claude-haiku-4.5", Usage(0, 1_000_000), intent="agent")  # $4
    clock.advance(3 * 86_400)
    costs.record("openai", "gpt-4o-mini", Usage(2_000_000, 0), intent="agent")  # $0.30
    today = costs.report("today")
    assert today.total_requests == 1
    assert today.by_provider["openai"].cost == pytest.approx(0.30)
    week = costs.report("week")
    assert week.total_requests == 3
    assert week.by_intent["chat.document"].requests == 1
    assert week.by_intent["agent"].cost == pytest.approx(4.30)
    assert week.by_provider["anthropic"].cost == pytest.approx(4.0)
    with pytest.raises(InvalidArgument):
        costs.report("year")


def test_budget_warning_at_80_percent_and_rejection_beyond(db, clock):
    costs = tracker(db, clock, daily_budget=1.0, monthly_budget=100.0)
    costs.record("p", "gpt-4o-mini", Usage(0, 0, cost_usd=0.79))
    assert not costs.budget().warning
    costs.record("p", "gpt-4o-mini", Usage(0, 0, cost_usd=0.01))
    assert costs.budget().warning
    assert costs.check(0.1).daily_spent == pytest.approx(0.8)
    with pytest.raises(ResourceExhausted) as exceeded:
        costs.check(0.25)
    assert exceeded.value.reason == "BUDGET_EXCEEDED"
    assert exceeded.value.metadata["budget"] == "daily"
    clock.advance(86_400)  # a new UTC day: the daily budget resets, the month keeps counting
    assert costs.check(0.25).monthly_spent == pytest.approx(0.8)


def test_estimate_prices_prompt_and_answer(db, clock):
    costs = tracker(db, clock)
    assert costs.estimate("gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.15 + 0.6)
    assert costs.estimate("SmolLM2-135M-Instruct smollm2", 10_000, 10_000) == 0.0


def test_spend_of_a_request_is_summed(db, clock):
    costs = tracker(db, clock)
    with track_spend() as spend:
        costs.record("p", "m", Usage(cost_usd=0.1))
        costs.record("p", "m", Usage(cost_usd=0.2))
    costs.record("p", "m", Usage(cost_usd=5))
    assert spend.total == pytest.approx(0.3)


def test_records_survive_a_restart(db_path, clock):
    first = Database(db_path)
    tracker(first, clock).record("openai", "gpt-4o-mini", Usage(0, 0, cost_usd=1.5))
    first.close()
    second = Database(db_path)
    assert tracker(second, clock).report("month").total_cost == pytest.approx(1.5)
    second.close()
