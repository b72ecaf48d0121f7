"""The benchmark's metrics against hand-computed values (the numbers in the README rest on them)."""

from __future__ import annotations

import math

import pytest

from bench.metrics import exact_match, ndcg_at_k, normalize_answer, recall_at_k, token_f1


def test_ndcg_binary_relevance():
    rel = {"a": 1, "b": 1}
    assert ndcg_at_k(["a", "b", "x"], rel, 10) == pytest.approx(1.0)
    expected = (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(["x", "a", "b"], rel, 10) == pytest.approx(expected)
    assert ndcg_at_k(["x", "y"], rel, 10) == 0.0
    assert ndcg_at_k(["x", "a"], rel, 1) == 0.0


def test_recall():
    assert recall_at_k(["a", "x", "b"], {"a": 1, "b": 1, "c": 1}, 2) == pytest.approx(1 / 3)
    assert recall_at_k(["a", "x", "b"], {"a": 1, "b": 1, "c": 1}, 100) == pytest.approx(2 / 3)


def test_squad_em_and_f1():
    assert normalize_answer("The  Normans!") == "normans"
    assert exact_match("the 10th century", ["10th century", "in the 10th century"]) == 1.0
    assert exact_match("10th", ["10th century"]) == 0.0
    assert token_f1("10th century France", ["10th century"]) == pytest.approx(0.8)
    assert token_f1("Rollo", ["Denmark"]) == 0.0
