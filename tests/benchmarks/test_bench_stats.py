"""Summary statistics and the saturation rule of the benchmarks."""

from __future__ import annotations

import pytest

from bench.stats import compare, latency_summary, percentile, saturated, saturation_point, spread


def test_percentiles_interpolate_between_order_statistics():
    samples = [float(x) for x in range(1, 101)]  # 1..100
    assert percentile(samples, 50) == pytest.approx(50.5)
    assert percentile(samples, 95) == pytest.approx(95.05)
    assert percentile([7.0], 99) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)


def test_latency_summary_orders_its_percentiles():
    summary = latency_summary([10.0] * 90 + [100.0] * 10)
    assert summary["n"] == 100
    assert summary["p50"] == 10.0
    assert summary["p5"] <= summary["p50"] <= summary["p95"] <= summary["p99"] == 100.0
    assert summary["mean"] == pytest.approx(19.0)


def test_spread_reports_median_and_quartiles():
    s = spread([1.0, 2.0, 3.0, 4.0, 100.0])
    assert (s["median"], s["min"], s["max"], s["n"]) == (3.0, 1.0, 100.0, 5)
    assert s["q1"] == 2.0 and s["q3"] == 4.0


def test_compare_gives_difference_and_ratio():
    assert compare(12.0, 8.0) == {"difference": 4.0, "ratio": 1.5}
    assert compare(3.0, 0.0)["ratio"] is None


def test_saturation_knee_is_where_gains_fall_below_ten_percent():
    curve = [(1, 40.0), (2, 75.0), (4, 100.0), (8, 104.0), (16, 99.0)]
    point = saturation_point(curve)
    assert point["knee_concurrency"] == 4
    assert point["peak_qps"] == 104.0 and point["peak_concurrency"] == 8
    assert saturated(curve[:4]) and not saturated(curve[:3]) and not saturated(curve[:1])


def test_a_curve_that_never_flattens_has_its_knee_at_the_last_level():
    assert saturation_point([(1, 10.0), (2, 20.0), (4, 40.0)])["knee_concurrency"] == 4
