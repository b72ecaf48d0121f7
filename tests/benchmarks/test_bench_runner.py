"""bench.run: every benchmark in its own process, failures and timeouts recorded, report and plots written."""

from __future__ import annotations

import json
import subprocess
import sys

from bench.run import ROOT, render_again, run_suite
from bench.suite import SUITE, Benchmark, by_name

FAKE = "tests.benchmarks.fake_benchmarks"


def fake(name: str, mode: str, timeout_s: int = 60, overrides: dict | None = None) -> Benchmark:
    return Benchmark(name, FAKE, f"fake {mode}", lambda scratch: [mode], lambda scratch: [mode], timeout_s, timeout_s,
                     quick_overrides=overrides or {})


def test_a_failing_or_hanging_benchmark_does_not_stop_the_others(tmp_path):
    suite = [fake("serving", "fail"), fake("nlp", "hang", timeout_s=3),
             fake("graph", "ok", overrides={f"{FAKE}.SCALE": 3})]
    run, code = run_suite(True, (), tmp_path / "results", suite, tmp_path / "logs")
    statuses = {name: entry["status"] for name, entry in run["benchmarks"].items()}
    assert statuses == {"serving": "failed", "nlp": "timeout", "graph": "ok"}
    assert code == 1 and run["failed"] == ["nlp", "serving"]
    assert any("deliberate failure" in line for line in run["benchmarks"]["serving"]["log_tail"])
    assert run["benchmarks"]["nlp"]["seconds"] < 30
    assert run["benchmarks"]["graph"]["result"]["scale"] == 3  # the quick override reached the child

    outputs = sorted(p.name for p in (tmp_path / "results").iterdir())
    json_name = next(n for n in outputs if n.endswith("-quick.json"))
    stem = json_name.removesuffix(".json")
    assert f"{stem}.md" in outputs and f"{stem}-graph.png" in outputs
    saved = json.loads((tmp_path / "results" / json_name).read_text())
    assert saved["headline"]["goals"]["graph"] == {"ladybug is faster": True}
    report = (tmp_path / "results" / f"{stem}.md").read_text()
    assert "**Failed: nlp, serving**" in report
    assert "deliberate failure for the runner test" in report
    assert f"![{stem}-graph.png]({stem}-graph.png)" in report
    assert "| arcadedb-bolt (neo4j driver) | 300 | 900 | 0.100 |" in report
    assert "embedding device requested / used | cpu / cpu" in report
    (tmp_path / "results" / f"{stem}.md").unlink()
    render_again(tmp_path / "results" / json_name)  # a report redrawn from the JSON alone
    assert (tmp_path / "results" / f"{stem}.md").read_text() == report


def test_an_override_of_a_missing_constant_fails_loudly(tmp_path):
    run, code = run_suite(True, (), tmp_path / "results", [fake("graph", "ok", overrides={f"{FAKE}.NOPE": 1})],
                          tmp_path / "logs")
    assert code == 1 and run["benchmarks"]["graph"]["status"] == "failed"
    assert any("NOPE" in line for line in run["benchmarks"]["graph"]["log_tail"])


def test_the_suite_names_real_modules_with_a_main_and_results():
    import importlib

    for bench in SUITE:
        source = (ROOT / (bench.module.replace(".", "/") + ".py")).read_text()
        assert "RESULTS" in source and "def main(" in source, bench.module
        for target in bench.quick_overrides:
            owner, attribute = target.rsplit(".", 1)
            assert hasattr(importlib.import_module(owner), attribute), target
    assert list(by_name()) == [b.name for b in SUITE]


def test_cli_requires_a_size_and_rejects_unknown_names():
    reply = subprocess.run([sys.executable, "-m", "bench.run", "--quick", "--only", "nosuch"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert reply.returncode == 2 and "unknown benchmark" in reply.stderr
