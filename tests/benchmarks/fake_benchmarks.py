"""A stand-in benchmark module for the runner tests: ``main()`` succeeds, fails or hangs on request.

It has what ``bench.run`` expects of a benchmark: a module-level RESULTS directory and a
``main()`` reading ``sys.argv``. The success case writes a graph-shaped result, so the
report renders a real section and plot from it.
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

RESULTS = pathlib.Path("not-set")
SCALE = 1
"""Overridable from the runner (quick_overrides), to show overrides reach the child."""


def main() -> None:
    mode = sys.argv[1]
    if mode == "fail":
        raise RuntimeError("deliberate failure for the runner test")
    if mode == "hang":
        time.sleep(600)
    rows = [{"backend": name, "fact_upserts": 100 * SCALE, "upserts_per_second": ups,
             "related_2hop_ms": {"p50": p50, "p95": p50 * 2}} for name, ups, p50 in
            (("ladybug", 9000.0, 1.5), ("arcadedb-bolt (neo4j driver)", 900.0, 6.0))]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "fake.json").write_text(json.dumps({"benchmark": "graph", "backends_agree": True, "results": rows,
                                                   "scale": SCALE, "goals": {"ladybug is faster": True}}))
