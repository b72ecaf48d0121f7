"""Evaluation figures for Prometheus, read from the store at scrape time: the last run that ran to its end (of
any tenant: figures only, never a tenant label) and the runs by state."""

from __future__ import annotations

from services.orchestrator.evals.records import STATES
from services.orchestrator.evals.store import EvalStore
from services.runtime.domain_metrics import register_state

LAST_RUN_FIGURES = ("answer_correct", "citation_hit", "answered_rate", "abstention_unanswerable", "latency_p50_s",
                    "latency_p95_s", "items", "errors")


def register_eval_metrics(store: EvalStore) -> None:
    def last_run():
        run = store.last_finished()
        if run is None or not run.totals:
            return []
        overall = run.totals.get("overall", {})
        rows = [((name,), overall[name]) for name in LAST_RUN_FIGURES if overall.get(name) is not None]
        rows.append((("finished_timestamp_seconds",), run.finished_at or 0.0))
        return rows

    register_state("docuthinker_eval_last_run", "Figures of the evaluation run that last ran to its end (rates over its"
                   " answerable or unanswerable questions, latencies in seconds, counts).", ["quantity"], last_run)

    def runs():
        counts = store.count_by_state()
        return [((state,), counts.get(state, 0)) for state in STATES]

    register_state("docuthinker_eval_runs", "Evaluation runs kept, by state.", ["state"], runs)
