"""The orchestrator's state as Prometheus gauges, read at scrape time: circuit breakers,
dead letters and LLM budget use (the mesh's budgets; per-tenant budgets are not labels)."""

from __future__ import annotations

from services.orchestrator.circuit_breaker import CircuitBreakers, CircuitState
from services.orchestrator.costs import CostTracker
from services.orchestrator.dlq import DeadLetterQueue
from services.runtime.domain_metrics import register_state

CIRCUIT_VALUES = {CircuitState.CLOSED: 0, CircuitState.HALF_OPEN: 1, CircuitState.OPEN: 2}


def register_metrics(breakers: CircuitBreakers, dlq: DeadLetterQueue, costs: CostTracker) -> None:
    register_state(
        "docuthinker_circuit_breaker_state", "State of each circuit breaker: 0 closed, 1 half-open, 2 open.",
        ["breaker"], lambda: [((c.name,), CIRCUIT_VALUES[c.state]) for c in breakers.all()],
    )

    def letters():
        counts = dlq.list(limit=0)[1]
        return [(("retrying",), counts.retrying), (("parked",), counts.parked), (("replayed",), counts.replayed)]

    register_state("docuthinker_dlq_letters", "Dead letters by state (retrying, parked, replayed).", ["state"], letters)

    def budget_use():
        status = costs.budget()
        rows = []
        for name, spent, limit in (("daily", status.daily_spent, status.daily_budget),
                                   ("monthly", status.monthly_spent, status.monthly_budget)):
            rows.append(((name, "spent_usd"), spent))
            rows.append(((name, "limit_usd"), limit))
            rows.append(((name, "ratio"), spent / limit if limit > 0 else 0.0))
        return rows

    register_state("docuthinker_llm_budget", "The mesh's LLM budgets: spend, limit and their ratio.",
                   ["budget", "quantity"], budget_use)
