"""Fusion functions with known rankings, computed by hand."""

from __future__ import annotations

import pytest

from services.rag.retrieval.fusion import Normalisation, normalise, reciprocal_rank_fusion, score_fusion


def test_rrf_matches_hand_computed_scores():
    rankings = {"keyword": [("a", 9.0), ("b", 5.0), ("c", 1.0)], "dense": [("b", 0.9), ("c", 0.8), ("d", 0.1)]}
    fused = reciprocal_rank_fusion(rankings, k=60)
    scores = {f.id: f.score for f in fused}
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 62)
    assert scores["d"] == pytest.approx(1 / 63)
    assert [f.id for f in fused] == ["b", "c", "a", "d"]
    assert fused[0].component_scores == {"keyword": 5.0, "dense": 0.9}


def test_rrf_ignores_score_magnitudes_and_counts_a_duplicate_once():
    big = reciprocal_rank_fusion({"x": [("a", 1000.0), ("b", 0.001)]})
    small = reciprocal_rank_fusion({"x": [("a", 0.2), ("b", 0.1), ("a", 0.05)]})
    assert [f.score for f in big] == [f.score for f in small]


def test_rrf_small_k_rewards_top_ranks_more():
    rankings = {"one": [("a", 1.0), ("b", 0.5)], "two": [("c", 1.0), ("b", 0.5)]}
    # with k=0, rank 1 in one list (1.0) beats rank 2 in both (0.5 + 0.5) only on ties order
    assert {f.id: f.score for f in reciprocal_rank_fusion(rankings, k=0)}["b"] == pytest.approx(1.0)
    assert [f.id for f in reciprocal_rank_fusion(rankings, k=60)][0] == "b"


def test_minmax_and_zscore_normalisation():
    assert normalise([10.0, 5.0, 0.0], Normalisation.MINMAX) == [1.0, 0.5, 0.0]
    z = normalise([3.0, 2.0, 1.0], Normalisation.ZSCORE)
    assert z[2] == pytest.approx(0.0) and z[0] == pytest.approx(2 * 1.224744871, rel=1e-6)
    assert normalise([0.8, 0.4], Normalisation.MAX) == [1.0, 0.5]
    assert normalise([2.0, 2.0], Normalisation.MINMAX) == [1.0, 1.0]
    assert normalise([], Normalisation.ZSCORE) == []


def test_score_fusion_weighted_sum_of_minmax_scores():
    rankings = {"keyword": [("a", 12.0), ("b", 6.0), ("c", 2.0)], "dense": [("c", 0.9), ("b", 0.7), ("d", 0.5)]}
    fused = score_fusion(rankings, {"keyword": 0.3, "dense": 0.7}, Normalisation.MINMAX)
    scores = {f.id: f.score for f in fused}
    assert scores["a"] == pytest.approx(0.3 * 1.0)
    assert scores["b"] == pytest.approx(0.3 * 0.4 + 0.7 * 0.5)
    assert scores["c"] == pytest.approx(0.3 * 0.0 + 0.7 * 1.0)
    assert scores["d"] == pytest.approx(0.0)
    assert [f.id for f in fused] == ["c", "b", "a", "d"]


def test_score_fusion_weight_moves_the_winner():
    rankings = {"keyword": [("a", 10.0), ("b", 1.0)], "dense": [("b", 0.9), ("a", 0.1)]}
    assert score_fusion(rankings, {"keyword": 0.8, "dense": 0.2}, Normalisation.MINMAX)[0].id == "a"
    assert score_fusion(rankings, {"keyword": 0.2, "dense": 0.8}, Normalisation.MINMAX)[0].id == "b"
