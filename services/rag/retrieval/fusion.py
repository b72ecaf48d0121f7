"""Fusion of ranked lists from the keyword and the dense retriever.

Two methods, both pure functions over ``(id, score)`` lists, best first:

- reciprocal rank fusion (RRF): ``sum(1 / (k + rank))`` with 1-based ranks and ``k = 60``
  (Cormack et al. 2009, and the seed's default); it ignores the scores themselves;
- normalised score fusion: each retriever's scores are normalised onto a common scale, then
  combined as a weighted sum (a convex combination, Bruch et al. 2023, "An Analysis of Fusion
  Functions for Hybrid Retrieval"). A candidate one retriever did not return counts as that
  retriever's floor (0 after normalisation), the same as its weakest returned candidate.

Which one is the default is decided by measurement (bench/quality_bench.py on SciFact); see
``DEFAULT_SCORE_FUSION`` and ``services.rag.retrieval.config``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

Ranking = Sequence[tuple[str, float]]
"""Ids with their retriever scores, best first (higher is better)."""

RRF_K = 60


class Normalisation(str, Enum):
    MINMAX = "minmax"
    """(s - min) / (max - min) over the returned candidates."""
    ZSCORE = "zscore"
    """(s - mean) / std, then shifted so the weakest returned candidate is 0."""
    MAX = "max"
    """s / max: keeps the retriever's own zero (cosine similarity, BM25 are both >= 0 here)."""


@dataclass(frozen=True)
class ScoreFusionConfig:
    """How the normalised score fusion weighs its retrievers."""

    dense_weight: float = 0.5
    """Weight of the dense retriever; the keyword retriever gets ``1 - dense_weight``."""
    normalisation: Normalisation = Normalisation.MINMAX


@dataclass(frozen=True)
class Fused:
    """One fused candidate: the fused score and the raw score each retriever gave it."""

    id: str
    score: float
    component_scores: Mapping[str, float]


def reciprocal_rank_fusion(rankings: Mapping[str, Ranking], k: int = RRF_K) -> list[Fused]:
    """RRF over named rankings; ties broken by the order in which ids were first seen."""
    if k < 0:
        raise ValueError("k must be >= 0")
    totals: dict[str, float] = {}
    raw: dict[str, dict[str, float]] = {}
    for name, ranking in rankings.items():
        for rank, (item, score) in enumerate(_dedupe(ranking), start=1):
            totals[item] = totals.get(item, 0.0) + 1.0 / (k + rank)
            raw.setdefault(item, {})[name] = score
    return _sorted(totals, raw)


def normalise(scores: Sequence[float], method: Normalisation) -> list[float]:
    """Scores mapped onto a common scale; a constant list maps to all ones (every item equally best)."""
    if not scores:
        return []
    if method is Normalisation.MAX:
        top = max(scores)
        return [s / top if top > 0 else 1.0 for s in scores]
    low, high = min(scores), max(scores)
    if math.isclose(high, low):
        return [1.0] * len(scores)
    if method is Normalisation.MINMAX:
        return [(s - low) / (high - low) for s in scores]
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    floor = (low - mean) / std
    return [(s - mean) / std - floor for s in scores]


def score_fusion(rankings: Mapping[str, Ranking], weights: Mapping[str, float], method: Normalisation) -> list[Fused]:
    """Weighted sum of per-retriever normalised scores; missing candidates contribute 0."""
    totals: dict[str, float] = {}
    raw: dict[str, dict[str, float]] = {}
    for name, ranking in rankings.items():
        ranking = _dedupe(ranking)
        weight = weights.get(name, 0.0)
        for (item, score), norm in zip(ranking, normalise([s for _, s in ranking], method), strict=True):
            totals[item] = totals.get(item, 0.0) + weight * norm
            raw.setdefault(item, {})[name] = score
    return _sorted(totals, raw)


def _dedupe(ranking: Ranking) -> list[tuple[str, float]]:
    # A retriever may return one id twice (e.g. two vectors of one chunk); its best rank counts.
    seen: set[str] = set()
    unique = []
    for item, score in ranking:
        if item not in seen:
            seen.add(item)
            unique.append((item, float(score)))
    return unique


def _sorted(totals: dict[str, float], raw: dict[str, dict[str, float]]) -> list[Fused]:
    order = {item: i for i, item in enumerate(totals)}
    ranked = sorted(totals, key=lambda item: (-totals[item], order[item]))
    return [Fused(item, totals[item], raw[item]) for item in ranked]
