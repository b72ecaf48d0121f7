"""Summary statistics of benchmark samples: percentiles, spread, and comparisons of two sides.

Percentiles interpolate linearly between order statistics (numpy's default, "type 7"), so a
p99 over 40 samples is an estimate between the two largest, not the maximum; reports say how
many samples each figure rests on.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def percentile(samples: Sequence[float], q: float) -> float:
    if not samples:
        raise ValueError("no samples")
    return float(np.percentile(np.asarray(samples, dtype=np.float64), q))


def latency_summary(ms: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99 of request latencies (ms) with the p5-p95 band and the mean."""
    return {
        "n": len(ms),
        "p5": round(percentile(ms, 5), 3),
        "p50": round(percentile(ms, 50), 3),
        "p95": round(percentile(ms, 95), 3),
        "p99": round(percentile(ms, 99), 3),
        "mean": round(float(np.mean(ms)), 3),
    }


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median and interquartile range over repeats of one measurement."""
    return {
        "n": len(values),
        "median": round(percentile(values, 50), 4),
        "q1": round(percentile(values, 25), 4),
        "q3": round(percentile(values, 75), 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
    }


def compare(candidate: float, reference: float) -> dict[str, float | None]:
    """``candidate`` against ``reference``: difference and ratio (None when the reference is 0)."""
    return {
        "difference": round(candidate - reference, 4),
        "ratio": round(candidate / reference, 4) if reference else None,
    }


def saturation_point(qps_by_concurrency: Sequence[tuple[int, float]], min_gain: float = 0.1) -> dict[str, float]:
    """Where throughput stops growing: the first level whose successor gains less than ``min_gain``.

    ``qps_by_concurrency`` is ordered by concurrency. The peak QPS is the best seen anywhere
    (a noisy machine can dip and recover); the knee is the concurrency after which adding
    clients bought less than ``min_gain`` (10 %) more throughput.
    """
    if not qps_by_concurrency:
        raise ValueError("no levels")
    knee = qps_by_concurrency[-1][0]
    for (c, qps), (_, next_qps) in zip(qps_by_concurrency, qps_by_concurrency[1:]):
        if next_qps < qps * (1 + min_gain):
            knee = c
            break
    peak_c, peak = max(qps_by_concurrency, key=lambda item: item[1])
    return {"knee_concurrency": knee, "peak_qps": round(peak, 2), "peak_concurrency": peak_c}


def saturated(qps_by_concurrency: Sequence[tuple[int, float]], min_gain: float = 0.1) -> bool:
    """True once the last level gained less than ``min_gain`` over the one before."""
    if len(qps_by_concurrency) < 2:
        return False
    (_, before), (_, last) = qps_by_concurrency[-2], qps_by_concurrency[-1]
    return last < before * (1 + min_gain)
