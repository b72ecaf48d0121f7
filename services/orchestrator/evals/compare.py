"""Two runs side by side: their settings and identities, their totals, and what got better or worse, item by item.

Items are matched by their id. An item is ``better`` when it became correct, or stayed as correct and its
citation now hits (``worse`` the other way round); an unanswerable item is correct when the engine refused.
Items only one of the runs has are ``added`` or ``removed`` (the runs may be of different versions of a set).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.orchestrator.evals.records import EvalRun, ItemResult

BETTER, WORSE, SAME, ADDED, REMOVED = "better", "worse", "same", "added", "removed"
FIGURES = ("answer_correct", "citation_hit", "answered_rate", "abstention_unanswerable", "latency_p50_s",
           "latency_p95_s")


@dataclass(frozen=True)
class ItemChange:
    item_id: str
    question: str
    change: str
    base: ItemResult | None
    candidate: ItemResult | None


@dataclass(frozen=True)
class Difference:
    name: str
    base: Any
    candidate: Any


@dataclass(frozen=True)
class Comparison:
    base: EvalRun
    candidate: EvalRun
    base_totals: Mapping[str, Any]
    candidate_totals: Mapping[str, Any]
    deltas: Mapping[str, float]
    """candidate - base of each overall figure both runs have."""
    differences: tuple[Difference, ...]
    """Settings and identities that differ between the runs."""
    items: tuple[ItemChange, ...]
    counts: Mapping[str, int]


def _rank(result: ItemResult) -> tuple[bool, bool]:
    return result.correct, result.citation_hit


def change_of(base: ItemResult | None, candidate: ItemResult | None) -> str:
    if base is None:
        return ADDED
    if candidate is None:
        return REMOVED
    before, after = _rank(base), _rank(candidate)
    return BETTER if after > before else WORSE if after < before else SAME


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), inner, out)
    else:
        out[prefix] = value


def differences(base: EvalRun, candidate: EvalRun) -> tuple[Difference, ...]:
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    _flatten("settings", base.settings.as_json(), left)
    _flatten("settings", candidate.settings.as_json(), right)
    _flatten("identities", dict(base.identities), left)
    _flatten("identities", dict(candidate.identities), right)
    if base.set_id != candidate.set_id:
        left["set_id"], right["set_id"] = base.set_id, candidate.set_id
    return tuple(Difference(k, left.get(k), right.get(k)) for k in sorted(set(left) | set(right))
                 if left.get(k) != right.get(k))


def compare(base: EvalRun, base_results: Sequence[ItemResult], base_totals: Mapping[str, Any],
            candidate: EvalRun, candidate_results: Sequence[ItemResult],
            candidate_totals: Mapping[str, Any]) -> Comparison:
    before = {r.item.id: r for r in base_results}
    after = {r.item.id: r for r in candidate_results}
    order = [r.item.id for r in base_results] + [r.item.id for r in candidate_results if r.item.id not in before]
    items = []
    for item_id in order:
        b, c = before.get(item_id), after.get(item_id)
        either = b or c
        question = either.item.question if either is not None else ""
        items.append(ItemChange(item_id, question, change_of(b, c), b, c))
    counts = {name: sum(1 for i in items if i.change == name) for name in (BETTER, WORSE, SAME, ADDED, REMOVED)}
    left, right = base_totals.get("overall", {}), candidate_totals.get("overall", {})
    deltas = {name: round(right[name] - left[name], 4) for name in FIGURES
              if left.get(name) is not None and right.get(name) is not None}
    return Comparison(base, candidate, base_totals, candidate_totals, deltas, differences(base, candidate),
                      tuple(items), counts)
