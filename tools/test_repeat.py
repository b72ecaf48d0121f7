"""Runs the slow, real-process tests N times over, each run a fresh pytest session (its own meshes, models
and module fixtures, as CI starts them), and reports every failure with its test id and run number.

    python tools/test_repeat.py --runs 5                      # make test-repeat (N=5): -m "e2e or models"
    python tools/test_repeat.py --runs 3 -- tests/e2e/test_crew_analysis.py    # a subset, 3 times

Each run's console output goes to logs/test-repeat/run-<n>.log and its session report (tests/session_report.py)
to logs/test-repeat/run-<n>.json; the summary (tests x runs, every failure, the tests that failed in some runs
and passed in others, the slowest tests by median) to bench/results/test-repeat-<date>.json and the console.
Exits 1 when any run had a failure or an error.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import shlex
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BAD = ("failed", "error")


def run_once(number: int, marker: str, pytest_args: list[str], logs: pathlib.Path) -> dict:
    report = logs / f"run-{number}.json"
    report.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider", "-m", marker,
            f"--session-report={report}", *pytest_args]
    print(f"\n== run {number}: {shlex.join(argv[1:])}", flush=True)
    started = time.monotonic()
    with open(logs / f"run-{number}.log", "wb") as log:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert proc.stdout is not None
        while chunk := os.read(proc.stdout.fileno(), 4096):  # as it comes: pytest's progress dots end no line
            log.write(chunk)
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
        code = proc.wait()
    wall = round(time.monotonic() - started, 1)
    if not report.exists():  # pytest died before writing it (collection error, crash): the whole run failed
        return {"run": number, "exit_status": code, "wall_s": wall, "tests": {},
                "crash": f"no session report; see {logs / f'run-{number}.log'}"}
    session = json.loads(report.read_text())
    return {"run": number, **session, "wall_s": wall}


def summarise(runs: list[dict], marker: str, pytest_args: list[str]) -> dict:
    ids = sorted({test for run in runs for test in run["tests"]})
    failures = [{"run": run["run"], "test": test, "outcome": result["outcome"], "phase": result.get("phase", ""),
                 "message": result.get("message", "")}
                for run in runs for test, result in sorted(run["tests"].items()) if result["outcome"] in BAD]
    crashed = [{"run": run["run"], "test": "(session)", "outcome": "crash", "phase": "", "message": run["crash"]}
               for run in runs if "crash" in run]
    failed_in: dict[str, list[int]] = {}
    for failure in failures:
        failed_in.setdefault(failure["test"], []).append(failure["run"])
    totals = {test: [run["tests"][test]["total_s"] for run in runs if test in run["tests"]] for test in ids}
    slowest = sorted(((test, statistics.median(t)) for test, t in totals.items() if t), key=lambda kv: kv[1],
                     reverse=True)[:30]
    return {
        "date": datetime.date.today().isoformat(),
        "marker": marker,
        "pytest_args": pytest_args,
        "runs": len(runs),
        "tests": len(ids),
        "tests_x_runs": sum(len(run["tests"]) for run in runs),
        "failures": len(failures) + len(crashed),
        "per_run": [{"run": run["run"], "wall_s": run["wall_s"], "exit_status": run["exit_status"],
                     "counts": run.get("counts", {}), "load_average_start": run.get("load_average_start"),
                     "load_average_end": run.get("load_average_end")} for run in runs],
        "failed": failures + crashed,
        "flaky": {test: {"failed_in_runs": runs_, "passed_in": sum(1 for run in runs if test in run["tests"])
                         - len(runs_)} for test, runs_ in failed_in.items() if len(runs_) < len(runs)},
        "slowest_by_median": [{"test": test, "median_s": round(seconds, 2),
                               "runs_s": totals[test]} for test, seconds in slowest],
        "cpus": os.cpu_count(),
    }


def print_summary(summary: dict, path: pathlib.Path) -> None:
    print(f"\n== test-repeat: {summary['runs']} runs of -m {summary['marker']!r} "
          f"{' '.join(summary['pytest_args'])}".rstrip())
    for run in summary["per_run"]:
        counts = ", ".join(f"{n} {k}" for k, n in run["counts"].items()) or "no report"
        print(f"run {run['run']}: {counts} in {run['wall_s']:.0f} s "
              f"(load {run['load_average_start']} -> {run['load_average_end']})")
    print(f"tests x runs: {summary['tests']} x {summary['runs']} ({summary['tests_x_runs']} test runs), "
          f"failures: {summary['failures']}")
    for failure in summary["failed"]:
        print(f"  FAILED run {failure['run']}: {failure['test']} ({failure['outcome']} in {failure['phase'] or '-'}): "
              f"{failure['message'][:300]}")
    for test, seen in summary["flaky"].items():
        print(f"  flaky: {test} failed in runs {seen['failed_in_runs']}, passed in {seen['passed_in']}")
    print(f"results: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="pytest sessions, one after the other (default 5)")
    parser.add_argument("-m", "--marker", default="e2e or models", help='pytest -m expression (default "e2e or models")')
    parser.add_argument("--out", type=pathlib.Path, default=None,
                        help="summary file (default bench/results/test-repeat-<date>.json)")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --): paths, -k, -x ...")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    logs = ROOT / "logs" / "test-repeat"
    logs.mkdir(parents=True, exist_ok=True)
    for stale in logs.glob("run-*"):  # an earlier, longer repeat's runs
        stale.unlink()
    runs = [run_once(n, args.marker, args.pytest_args, logs) for n in range(1, args.runs + 1)]
    summary = summarise(runs, args.marker, args.pytest_args)
    out = args.out or ROOT / "bench" / "results" / f"test-repeat-{summary['date']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n")
    print_summary(summary, out)
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
