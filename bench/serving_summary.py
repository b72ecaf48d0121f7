"""Turns the serving benchmark's raw rounds into the figures the report quotes.

A measurement cell is (corpus size, operation, way); each cell ran ``rounds`` times, the three
ways interleaved within a round so drifting load on a shared machine hits them alike. Per
concurrency level this keeps the median over rounds of each round's p50/p95/p99 and QPS, with
the min-max over rounds as the spread. Overheads are paired: the difference (and ratio) of two
ways' percentiles within the same round, then the median over rounds.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from bench.stats import compare, spread

PAIRS = {"grpc_vs_inprocess": ("grpc", "inprocess"), "rest_vs_inprocess": ("rest", "inprocess"),
         "rest_vs_grpc": ("rest", "grpc")}
PERCENTILES = ("p50", "p95", "p99")


def _by_level(rounds: Sequence[dict]) -> dict[int, list[dict]]:
    """Concurrency -> that level's result in every round that measured it."""
    levels: dict[int, list[dict]] = {}
    for ladder in rounds:
        for level in ladder["levels"]:
            levels.setdefault(level["concurrency"], []).append(level)
    return levels


def summarise_way(rounds: Sequence[dict]) -> dict:
    levels = {}
    for concurrency, results in sorted(_by_level(rounds).items()):
        measured = [r for r in results if r["latency_ms"]["n"]]
        if not measured:
            continue
        entry = {"rounds": len(measured), "requests": sum(r["latency_ms"]["n"] for r in measured),
                 "errors": sum(r["errors"] for r in results)}
        for p in PERCENTILES:
            values = [r["latency_ms"][p] for r in measured]
            entry[f"{p}_ms"] = round(statistics.median(values), 3)
            entry[f"{p}_ms_spread"] = spread(values)
        qps = [r["qps"] for r in measured]
        entry["qps"] = round(statistics.median(qps), 2)
        entry["qps_spread"] = spread(qps)
        levels[concurrency] = entry
    saturation = [ladder["saturation"] for ladder in rounds]
    return {
        "by_concurrency": levels,
        "peak_qps": round(statistics.median(s["peak_qps"] for s in saturation), 2),
        "peak_qps_spread": spread([s["peak_qps"] for s in saturation]),
        "knee_concurrency": statistics.median_low(s["knee_concurrency"] for s in saturation),
        "levels_walked": max(len(ladder["levels"]) for ladder in rounds),
        "errors": sum(ladder["errors"] for ladder in rounds),
    }


def overheads(rounds_by_way: dict[str, Sequence[dict]], concurrencies: Sequence[int]) -> dict:
    """Paired differences and ratios of percentiles between ways, median over rounds."""
    out: dict = {}
    for name, (candidate, reference) in PAIRS.items():
        if candidate not in rounds_by_way or reference not in rounds_by_way:
            continue
        per_level = {}
        for concurrency in concurrencies:
            diffs: dict[str, list[float]] = {p: [] for p in PERCENTILES}
            ratios: dict[str, list[float]] = {p: [] for p in PERCENTILES}
            for cand, ref in zip(rounds_by_way[candidate], rounds_by_way[reference], strict=False):
                a, b = _level(cand, concurrency), _level(ref, concurrency)
                if a is None or b is None:
                    continue
                for p in PERCENTILES:
                    c = compare(a["latency_ms"][p], b["latency_ms"][p])
                    diffs[p].append(c["difference"])
                    if c["ratio"] is not None:
                        ratios[p].append(c["ratio"])
            if diffs["p50"]:
                per_level[concurrency] = {
                    **{f"{p}_diff_ms": round(statistics.median(diffs[p]), 3) for p in PERCENTILES},
                    **{f"{p}_ratio": round(statistics.median(ratios[p]), 3) for p in PERCENTILES if ratios[p]},
                    "p50_diff_ms_spread": spread(diffs["p50"]),
                    "rounds": len(diffs["p50"]),
                }
        out[name] = per_level
    return out


def _level(ladder: dict, concurrency: int) -> dict | None:
    for level in ladder["levels"]:
        if level["concurrency"] == concurrency and level["latency_ms"]["n"]:
            return level
    return None


def agreement(ids_by_way: dict[str, list[list[str]]]) -> dict:
    """Share of queries whose ranked chunk ids are identical across the ways (same production path)."""
    ways = [w for w in ids_by_way if ids_by_way[w]]
    if len(ways) < 2:
        return {"queries": 0, "identical_share": None}
    n = min(len(ids_by_way[w]) for w in ways)
    same = sum(1 for i in range(n) if len({tuple(ids_by_way[w][i]) for w in ways}) == 1)
    return {"queries": n, "identical_share": round(same / n, 4) if n else None, "ways": ways}
