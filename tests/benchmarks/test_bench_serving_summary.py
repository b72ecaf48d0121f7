"""Aggregation of the serving benchmark's rounds: medians over rounds, paired overheads, agreement."""

from __future__ import annotations

import pytest

from bench.serving_summary import agreement, overheads, summarise_way


def level(concurrency: int, p50: float, p95: float, qps: float) -> dict:
    return {"concurrency": concurrency, "errors": 0, "qps": qps,
            "latency_ms": {"n": 20, "p5": p50 / 2, "p50": p50, "p95": p95, "p99": p95 * 1.2, "mean": p50}}


def ladder(*levels: dict) -> dict:
    qps = [(lv["concurrency"], lv["qps"]) for lv in levels]
    peak = max(qps, key=lambda x: x[1])
    return {"levels": list(levels), "errors": 0,
            "saturation": {"knee_concurrency": levels[-1]["concurrency"], "peak_qps": peak[1],
                           "peak_concurrency": peak[0]}}


def test_way_summary_takes_the_median_over_rounds():
    rounds = [ladder(level(1, 10, 20, 90), level(4, 30, 50, 120)),
              ladder(level(1, 12, 22, 80), level(4, 34, 60, 110)),
              ladder(level(1, 50, 90, 20), level(4, 90, 99, 40))]  # one disturbed round
    summary = summarise_way(rounds)
    c1 = summary["by_concurrency"][1]
    assert c1["p50_ms"] == 12 and c1["p95_ms"] == 22 and c1["qps"] == 80
    assert c1["p50_ms_spread"]["min"] == 10 and c1["p50_ms_spread"]["max"] == 50
    assert c1["requests"] == 60 and summary["peak_qps"] == 110


def test_overheads_are_paired_within_rounds():
    rounds = {
        "inprocess": [ladder(level(1, 10, 20, 1)), ladder(level(1, 40, 60, 1))],
        "grpc": [ladder(level(1, 12, 25, 1)), ladder(level(1, 43, 66, 1))],
        "rest": [ladder(level(1, 14, 30, 1)), ladder(level(1, 45, 70, 1))],
    }
    result = overheads(rounds, [1])
    rest = result["rest_vs_inprocess"][1]
    # Paired differences are 4 and 5 ms; unpaired medians (27 - 25) would hide the drift.
    assert rest["p50_diff_ms"] == pytest.approx(4.5)
    assert rest["p95_diff_ms"] == pytest.approx(10.0)
    assert rest["p50_ratio"] == pytest.approx((1.4 + 45 / 40) / 2, abs=1e-3)
    assert result["grpc_vs_inprocess"][1]["p50_diff_ms"] == pytest.approx(2.5)
    assert result["rest_vs_grpc"][1]["rounds"] == 2


def test_agreement_counts_identical_rankings():
    ids = {"inprocess": [["a", "b"], ["c", "d"]], "grpc": [["a", "b"], ["d", "c"]], "rest": [["a", "b"], ["c", "d"]]}
    assert agreement(ids) == {"queries": 2, "identical_share": 0.5, "ways": ["inprocess", "grpc", "rest"]}


def serving_result() -> dict:
    rounds = {
        "inprocess": [ladder(level(1, 10, 20, 90), level(4, 30, 50, 120))],
        "grpc": [ladder(level(1, 12, 25, 80), level(4, 33, 55, 115))],
        "rest": [ladder(level(1, 14, 30, 70), level(4, 36, 58, 110))],
    }
    op = {"distinct_queries": 5, "ways": {w: summarise_way(r) for w, r in rounds.items()},
          "overhead": overheads(rounds, [1, 4]), "agreement": {"queries": 3, "identical_share": 1.0}}
    return {"corpora": {"1000": {"documents": 2, "store_seconds": 1.0, "bm25_seconds": 0.2}},
            "answer_engine": {"provider": "local"}, "plan": {"rounds": 1},
            "measurements": {"1000": {"search": op, "query": {**op, "cold_c1_ms": {"rest": {"p50": 300.0, "p95": 400.0,
                                                                                              "n": 4}}}}},
            "peak_rss_mb": {"rag": 900.0}}


def test_serving_section_and_plots_render_from_a_result(tmp_path):
    from bench.plots import PLOTS
    from bench.report_sections import serving

    result = serving_result()
    text = "\n".join(serving(result))
    assert "| rest vs inprocess | 1 | 4.00 | 1.400 | 10.00 | 1.500 |" in text
    assert "| inprocess | 4 | 30.0 | 50.0 | 60.0 | 120.0 | 20 | 0 |" in text
    assert "| rest | 300.0 | 400.0 | 4 |" in text and "| rag | 900 |" in text
    for suffix, draw in PLOTS["serving"]:
        draw(result, tmp_path / f"{suffix}.png")
        assert (tmp_path / f"{suffix}.png").stat().st_size > 1000
