"""Quality benchmark of retrieval and grounded answers (``make bench-quality``).

- SciFact (train queries): nDCG@10 and Recall@100 for BM25 alone, dense alone, RRF and the
  normalised score fusion, in one run (``bench.scifact``);
- SQuAD 2.0 (dev articles + distractors in one index): evidence@5, EM / token F1, abstention
  on unanswerable questions, answer rate, citation precision (``bench.squad``).
Goals are checked and printed next to the numbers; the JSON goes to
``bench/results/quality-<date>.json``. ``run(quick)`` is the entry point of the bench runner;
the quick variant samples queries and documents (seeded) to stay around two minutes once the
embedding cache (data/bench-cache) is warm.

Usage: python -m bench.quality_bench [--quick] [--sweep]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import pathlib
import time

from bench import scifact, squad

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def goals(result: dict) -> dict[str, bool]:
    methods = result["scifact"]["methods"]
    default = {"SCORE": "score", "RRF": "rrf", "DENSE_ONLY": "dense", "KEYWORD_ONLY": "bm25"}[
        result["scifact"]["default_fusion"]]
    fused = methods[default]["ndcg@10"]
    s = result["squad"]
    return {
        "scifact: default fusion beats bm25, dense and rrf by >= 0.01 nDCG@10": all(
            fused >= methods[m]["ndcg@10"] + 0.01 for m in ("bm25", "dense", "rrf") if m != default),
        "squad: evidence@5 >= 0.95": s["evidence@5"] >= 0.95,
        "squad: abstention >= 0.7 while answering >= 0.8": (
            s["abstention_rate_unanswerable"] >= 0.7 and s["answer_rate_answerable"] >= 0.8),
        "squad: citation precision >= 0.95": s["citation_precision"] >= 0.95,
    }


def run(quick: bool, sweep: bool = False) -> dict:
    started = time.perf_counter()
    result = {"variant": "quick" if quick else "full", "date": dt.date.today().isoformat()}
    result["scifact"] = scifact.run(quick, sweep=sweep)
    result["squad"] = squad.run(quick)
    result["goals"] = goals(result)
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def write(result: dict) -> pathlib.Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "" if result["variant"] == "full" else "-quick"
    path = RESULTS / f"quality-{result['date']}{suffix}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description="DocuThinker retrieval and answer quality benchmark")
    parser.add_argument("--quick", action="store_true", help="seeded samples (about two minutes with a warm cache)")
    parser.add_argument("--sweep", action="store_true", help="also measure a grid of score-fusion settings")
    args = parser.parse_args()
    result = run(args.quick, args.sweep)
    print(json.dumps(result, indent=2))
    print(f"written to {write(result)}")


if __name__ == "__main__":
    main()
