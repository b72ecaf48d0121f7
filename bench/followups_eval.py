"""The offline follow-up resolver (services/orchestrator/followups.py) on its example sets: how many follow-ups
it reads as the expected self-contained question, per set, with every miss.

    python -m bench.followups_eval --out bench/results/followups-<date>.json
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

from services.orchestrator.followups import FollowUpResolver
from tests.orchestrator.followup_cases import load, score

SETS = {
    "followups_dev.jsonl": "written with the rules; tuned on",
    "followups_heldout.jsonl": "written before the resolver, read while designing it; one fix came from it",
    "followups_heldout_b.jsonl": "written after the rules were frozen, scored once, never tuned on",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    args = parser.parse_args()
    resolver = FollowUpResolver()
    results = {}
    for name, note in SETS.items():
        started = time.perf_counter()
        ok, total, misses = score(name, resolver)
        elapsed = time.perf_counter() - started
        results[name] = {"correct": ok, "total": total, "accuracy": round(ok / total, 3), "note": note,
                         "unchanged_cases": sum(c.unchanged for c in load(name)),
                         "ms_per_question": round(1000 * elapsed / total, 3), "misses": misses}
    args.out.write_text(json.dumps({"resolver": "services/orchestrator/followups.py (rules, no model)",
                                    "sets": results}, indent=2) + "\n")
    for name, r in results.items():
        print(f"{name}: {r['correct']}/{r['total']} ({r['ms_per_question']} ms per question)")


if __name__ == "__main__":
    main()
