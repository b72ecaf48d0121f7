"""Totals of scored items, overall and per kind and tag: the same figures for an evaluation run and the benches
(bench/docqa_score.py re-exports ``summarise`` and ``breakdown``).

``answer_correct``, ``citation_hit`` and ``answered_rate`` are over answerable items (an abstention counts as a
miss); ``abstention_unanswerable`` is the share of unanswerable items the engine refused; a rate over no items is
None, not 0.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, Protocol


class Scored(Protocol):
    """A scored item (read-only: the bench's outcomes and a run's results both are one)."""

    @property
    def kind(self) -> str: ...
    @property
    def tags(self) -> Sequence[str]: ...
    @property
    def answered(self) -> bool: ...
    @property
    def correct(self) -> bool: ...
    @property
    def citation_hit(self) -> bool: ...
    @property
    def seconds(self) -> float: ...
    @property
    def answerable(self) -> bool: ...


def _rate(values: Sequence[bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 4)


def summarise(outcomes: Sequence[Scored]) -> dict[str, Any]:
    answerable = [o for o in outcomes if o.answerable]
    unanswerable = [o for o in outcomes if not o.answerable]
    seconds = [o.seconds for o in outcomes]
    return {
        "items": len(outcomes),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "answer_correct": _rate([o.correct for o in answerable]),
        "citation_hit": _rate([o.citation_hit for o in answerable]),
        "answered_rate": _rate([o.answered for o in answerable]),
        "correct_when_answered": _rate([o.correct for o in answerable if o.answered]),
        "abstention_unanswerable": _rate([not o.answered for o in unanswerable]),
        "latency_p50_s": percentile(seconds, 0.5),
        "latency_p95_s": percentile(seconds, 0.95),
        "latency_mean_s": round(statistics.fmean(seconds), 4) if seconds else None,
    }


def breakdown(outcomes: Sequence[Scored]) -> dict[str, Any]:
    kinds = sorted({o.kind for o in outcomes})
    tags = sorted({t for o in outcomes for t in o.tags})
    return {
        "overall": summarise(outcomes),
        "per_kind": {k: summarise([o for o in outcomes if o.kind == k]) for k in kinds},
        "per_tag": {t: summarise([o for o in outcomes if t in o.tags]) for t in tags},
    }
