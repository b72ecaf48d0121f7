from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from services.orchestrator.costs import CostTracker, intent_scope, track_spend
from services.orchestrator.database import Database
from services.providers.base import Usage
from services.providers.pricing import load_price_table
from services.runtime import request_context
from services.runtime.errors import InvalidArgument, ResourceExhausted

pytestmark = pytest.mark.store_backends  # every test that uses the database runs on both backends

PRICES = load_price_table()


def tracker(db, clock, **kw) -> CostTracker:
    return CostTracker(db, PRICES, clock=clock, **kw)


@contextmanager
def as_tenant(tenant: str) -> Iterator[None]:
    """What the server interceptor does for each RPC."""
    token = request_context.bind(request_context.RequestContext(request_id=f"req-{tenant}", tenant=tenant))
    try:
        yield
    finally:
        request_context.unbind(token)


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


def test_records_survive_a_restart(open_db, clock):
    first = open_db()
    tracker(first, clock).record("openai", "gpt-4o-mini", Usage(0, 0, cost_usd=1.5))
    first.close()
    second = open_db()
    assert tracker(second, clock).report("month").total_cost == pytest.approx(1.5)
    second.close()


def test_each_record_carries_the_tenant_of_its_request(db, clock):
    costs = tracker(db, clock)
    with as_tenant("acme"):
        costs.record("openai", "gpt-4o-mini", Usage(0, 0, cost_usd=0.5))
        costs.record("openai", "gpt-4o-mini", Usage(0, 0, cost_usd=0.25))
    with as_tenant("globex"):
        costs.record("openai", "gpt-4o-mini", Usage(0, 0, cost_usd=2.0))
    costs.record("openai", "gpt-4o-mini", Usage(0, 0, cost_usd=4.0))  # background work: no request bound
    rows = db.query("SELECT tenant, SUM(cost_usd) AS cost FROM cost_records GROUP BY tenant")
    assert {r["tenant"]: r["cost"] for r in rows} == pytest.approx({"acme": 0.75, "globex": 2.0, "": 4.0})


def test_a_tenant_over_its_limit_is_refused_while_others_and_the_mesh_still_pass(db, clock):
    costs = tracker(db, clock, daily_budget=10.0, tenant_daily_budget=1.0)
    with as_tenant("acme"):
        costs.record("p", "gpt-4o-mini", Usage(0, 0, cost_usd=0.9))
        assert costs.check(0.1).tenant.daily_spent == pytest.approx(0.9)
        with pytest.raises(ResourceExhausted) as exceeded:
            costs.check(0.2)
    assert exceeded.value.reason == "TENANT_BUDGET_EXCEEDED"
    assert exceeded.value.metadata == {
        "tenant": "acme", "budget": "daily", "limit_usd": "1", "spent_usd": "0.9", "estimated_usd": "0.2",
    }
    with as_tenant("globex"):
        status = costs.check(0.2)
    assert status.tenant.daily_spent == 0 and status.daily_spent == pytest.approx(0.9)
    costs.record("p", "gpt-4o-mini", Usage(0, 0, cost_usd=0.9))  # background work: no request bound
    assert costs.check(0.2).daily_spent == pytest.approx(1.8), "work outside a request has no tenant limit to meet"


def test_the_mesh_budget_still_binds_every_tenant(db, clock):
    costs = tracker(db, clock, daily_budget=1.0, tenant_daily_budget=0.8)
    for tenant in ("acme", "globex"):
        with as_tenant(tenant):
            costs.record("p", "gpt-4o-mini", Usage(0, 0, cost_usd=0.5))
    with as_tenant("initech"), pytest.raises(ResourceExhausted) as exceeded:
        costs.check(0.1)
    assert exceeded.value.reason == "BUDGET_EXCEEDED"


def test_no_tenant_limit_by_default(db, clock):
    costs = tracker(db, clock, daily_budget=100.0)
    with as_tenant("acme"):
        costs.record("p", "gpt-4o-mini", Usage(0, 0, cost_usd=50.0))
        status = costs.check(1.0)
    assert (status.tenant.daily_budget, status.tenant.monthly_budget, status.warning) == (0.0, 0.0, False)


def test_tenant_day_resets_at_midnight_utc_while_its_month_keeps_counting(db, clock):
    clock.now = 1_751_241_600.0 - 3_600  # 2025-06-29 23:00 UTC
    costs = tracker(db, clock, tenant_daily_budget=1.0, tenant_monthly_budget=1.5)
    with as_tenant("acme"):
        costs.record("p", "gpt-4o-mini", Usage(0, 0, cost_usd=0.9))
        with pytest.raises(ResourceExhausted) as daily:
            costs.check(0.2)
        assert daily.value.metadata["budget"] == "daily"
        clock.advance(2 * 3_600)  # 2025-06-30 01:00: a new day, the same month
        assert costs.check(0.2).tenant.monthly_spent == pytest.approx(0.9)
        costs.record("p", "gpt-4o-mini", Usage(0, 0, cost_usd=0.5))
        with pytest.raises(ResourceExhausted) as monthly:
            costs.check(0.2)
        assert monthly.value.metadata["budget"] == "monthly"
        assert monthly.value.metadata["spent_usd"] == "1.4"
        clock.advance(86_400)  # 2025-07-01 01:00: a new month
        status = costs.check(0.2)
    assert (status.tenant.daily_spent, status.tenant.monthly_spent) == (0.0, 0.0)


def test_tenant_budget_raises_the_warning(db, clock):
    costs = tracker(db, clock, daily_budget=100.0, tenant_daily_budget=1.0)
    with as_tenant("acme"):
        costs.record("p", "gpt-4o-mini", Usage(0, 0, cost_usd=0.8))
        assert costs.budget().warning
    with as_tenant("globex"):
        assert not costs.budget().warning


def test_report_shows_the_callers_tenant_beside_the_mesh_breakdown(db, clock):
    costs = tracker(db, clock, tenant_daily_budget=2.0, tenant_monthly_budget=20.0)
    with as_tenant("acme"):
        costs.record("openai", "gpt-4o-mini", Usage(0, 0, cost_usd=0.5))
        clock.advance(3 * 86_400)
        costs.record("openai", "gpt-4o-mini", Usage(0, 0, cost_usd=0.25))
    with as_tenant("globex"):
        costs.record("anthropic", "claude-haiku-4.5", Usage(0, 0, cost_usd=4.0))
    with as_tenant("acme"):
        today, week = costs.report("today"), costs.report("week")
    assert today.total_cost == pytest.approx(4.25) and set(today.by_provider) == {"openai", "anthropic"}
    assert (today.tenant_total.cost, today.tenant_total.requests) == (pytest.approx(0.25), 1)
    assert (week.tenant_total.cost, week.tenant_total.requests) == (pytest.approx(0.75), 2)
    tenant = today.budget.tenant
    assert (tenant.tenant, tenant.daily_budget, tenant.monthly_budget) == ("acme", 2.0, 20.0)
    assert tenant.daily_spent == pytest.approx(0.25)


def test_a_ledger_from_before_tenants_is_migrated_in_place(db_path, clock):
    old = Database(db_path)
    old.script(
        """
        CREATE TABLE cost_records (
            id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL,
            intent TEXT NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
            cache_read_tokens INTEGER NOT NULL, cache_write_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL
        );
        CREATE INDEX cost_records_ts ON cost_records (ts);
        """
    )
    old.execute(
        "INSERT INTO cost_records (ts, provider, model, intent, input_tokens, output_tokens, cache_read_tokens,"
        " cache_write_tokens, cost_usd) VALUES (?, 'openai', 'gpt-4o-mini', 'agent', 10, 5, 0, 0, 1.5)",
        (clock.now,),
    )
    old.close()

    db = Database(db_path)
    costs = tracker(db, clock)
    tracker(db, clock)  # a second start finds the column already there
    with as_tenant("acme"):
        costs.record("openai", "gpt-4o-mini", Usage(0, 0, cost_usd=0.5))
    rows = db.query("SELECT tenant, intent, cost_usd FROM cost_records ORDER BY id")
    assert [tuple(r) for r in rows] == [("", "agent", 1.5), ("acme", "unattributed", 0.5)]
    assert costs.report("today").total_cost == pytest.approx(2.0)
    plan = db.one("EXPLAIN QUERY PLAN SELECT SUM(cost_usd) FROM cost_records WHERE tenant = ? AND ts >= ?", ("a", 0))
    assert "cost_records_tenant_ts" in plan["detail"]
    db.close()
