"""Runs every benchmark and writes one JSON, a Markdown report and PNG plots (``make bench`` / ``bench-quick``).

Each benchmark of ``bench.suite`` runs in its own process (``python -m bench.run --child
MODULE``), with a time limit; the child points the benchmark's RESULTS directory at a scratch folder, so
a combined run never overwrites the per-benchmark result files their owners commit, and
hands its JSON back. A benchmark that fails or times out is recorded as failed (with the end
of its log), the others still run, and the exit code is 1. Logs: logs/bench/<stamp>/<name>.log.

Outputs, in bench/results/: ``<date>-<host>[-quick].json`` (every result plus the run's
environment), ``<date>-<host>[-quick].md`` (the report) and ``<date>-<host>[-quick]-*.png``.

    python -m bench.run --quick | --full [--only ingest,serving]
    python -m bench.run --render bench/results/<date>-<host>.json   # redraw report and plots
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import pathlib
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from bench.suite import SUITE, Benchmark, by_name

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
LOGS = ROOT / "logs" / "bench"
LOG_TAIL_LINES = 25


# -- child side ------------------------------------------------------------------------
def run_child(module_name: str, argv: list[str], overrides: dict, out: pathlib.Path, scratch: pathlib.Path) -> None:
    """Runs one benchmark's ``main()`` with ``argv``; copies the JSON it wrote to ``out``."""
    for target, value in overrides.items():
        owner, attribute = target.rsplit(".", 1)
        module = importlib.import_module(owner)
        getattr(module, attribute)  # a renamed constant must fail here, not be ignored
        setattr(module, attribute, value)
    module = importlib.import_module(module_name)
    results = pathlib.Path(tempfile.mkdtemp(prefix="results-", dir=scratch))
    module.RESULTS = results
    sys.argv = [module_name, *argv]
    module.main()
    written = sorted(results.glob("*.json"), key=lambda p: p.stat().st_mtime)
    if not written:
        raise SystemExit(f"{module_name} wrote no JSON result")
    shutil.copyfile(written[-1], out)


# -- parent side -----------------------------------------------------------------------
def _tail(path: pathlib.Path) -> list[str]:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [ln for ln in lines if "Loading weights" not in ln][-LOG_TAIL_LINES:]


def _shown(path: pathlib.Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_one(bench: Benchmark, quick: bool, scratch: pathlib.Path, log_dir: pathlib.Path) -> dict:
    out = scratch / f"{bench.name}.json"
    log = log_dir / f"{bench.name}.log"
    args, overrides = bench.args(quick, scratch), dict(bench.overrides(quick))
    argv = [sys.executable, "-m", "bench.run", "--quick" if quick else "--full", "--child", bench.module,
            "--child-args", json.dumps(args), "--child-overrides", json.dumps(overrides),
            "--scratch", str(scratch), "--out", str(out)]
    entry: dict = {"module": bench.module, "what": bench.what, "args": args, "overrides": overrides,
                   "timeout_s": bench.timeout_s(quick), "log": _shown(log)}
    cpu_before, started = _children_cpu_s(), time.perf_counter()
    print(f"[bench] {bench.name}: {bench.what} (limit {bench.timeout_s(quick)} s)", flush=True)
    with log.open("wb") as fh:
        # Own session: on timeout the whole group goes (the mesh's children die with their parent).
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait(timeout=bench.timeout_s(quick))
        except subprocess.TimeoutExpired:
            _stop(proc)
            code = None
    entry["seconds"] = round(time.perf_counter() - started, 1)
    entry["cpu_seconds"] = round(_children_cpu_s() - cpu_before, 1)
    if code is None:
        entry.update(status="timeout", error=f"no result within {bench.timeout_s(quick)} s", log_tail=_tail(log))
    elif code != 0 or not out.exists():
        entry.update(status="failed", error=f"exit code {code}", log_tail=_tail(log))
    else:
        try:
            entry.update(status="ok", result=json.loads(out.read_text()))
        except ValueError as exc:
            entry.update(status="failed", error=f"unreadable result: {exc}", log_tail=_tail(log))
    print(f"[bench] {bench.name}: {entry['status']} in {entry['seconds']} s", flush=True)
    return entry


def _stop(proc: subprocess.Popen) -> None:
    for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def run_suite(quick: bool, only: Sequence[str] = (), results_dir: pathlib.Path = RESULTS,
              suite: Sequence[Benchmark] = SUITE, log_root: pathlib.Path = LOGS) -> tuple[dict, int]:
    """Runs the selected benchmarks one after the other; returns the run and the exit code."""
    from bench.environment import describe

    selected = [b for b in suite if not only or b.name in only]
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    log_dir = log_root / stamp
    log_dir.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now(dt.UTC)
    clock = time.perf_counter()
    run: dict = {"variant": "quick" if quick else "full", "started": started.isoformat(timespec="seconds"),
                 "environment_at_start": describe(), "benchmarks": {}}
    with tempfile.TemporaryDirectory(prefix="docuthinker-bench-run-") as tmp:
        for bench in selected:
            run["benchmarks"][bench.name] = run_one(bench, quick, pathlib.Path(tmp), log_dir)
    run["seconds"] = round(time.perf_counter() - clock, 1)
    run["cpu_seconds"] = round(sum(b["cpu_seconds"] for b in run["benchmarks"].values()), 1)
    run["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    failed = sorted(n for n, b in run["benchmarks"].items() if b["status"] != "ok")
    run["failed"] = failed
    write_outputs(run, started, results_dir)
    return run, 1 if failed else 0


def write_outputs(run: dict, started: dt.datetime, results_dir: pathlib.Path) -> pathlib.Path:
    from bench.plots import render_all
    from bench.report import headline, render

    results_dir.mkdir(parents=True, exist_ok=True)
    suffix = "-quick" if run["variant"] == "quick" else ""
    base = f"{started.date().isoformat()}-{socket.gethostname()}{suffix}"
    run["headline"] = headline(run)
    run["plots"], run["plot_errors"] = render_all(run, results_dir, base)
    json_path = results_dir / f"{base}.json"
    json_path.write_text(json.dumps(run, indent=1) + "\n")
    (results_dir / f"{base}.md").write_text(render(run, json_path.name))
    print(f"[bench] wrote {json_path} and {base}.md ({sum(map(len, run['plots'].values()))} plots)", flush=True)
    return json_path


def render_again(json_path: pathlib.Path) -> None:
    """Redraws ``<base>.md`` and the plots next to a run's JSON (after a report change)."""
    from bench.plots import render_all
    from bench.report import headline, render

    run = json.loads(json_path.read_text())
    base = json_path.name.removesuffix(".json")
    run["headline"] = headline(run)
    run["plots"], run["plot_errors"] = render_all(run, json_path.parent, base)
    json_path.write_text(json.dumps(run, indent=1) + "\n")
    (json_path.parent / f"{base}.md").write_text(render(run, json_path.name))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--quick", action="store_true", help="reduced sizes (about five minutes, warm caches)")
    size.add_argument("--full", action="store_true", help="the real sizes (hours on two cores)")
    size.add_argument("--render", type=pathlib.Path, help="only redraw the report and plots of a run's JSON")
    parser.add_argument("--only", default="", help="comma-separated benchmark names: " + ",".join(by_name()))
    parser.add_argument("--results-dir", type=pathlib.Path, default=RESULTS, help="where the outputs go")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--child-args", default="[]", help=argparse.SUPPRESS)
    parser.add_argument("--child-overrides", default="{}", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=pathlib.Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=pathlib.Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.render:
        render_again(args.render)
        return 0
    if args.child:
        run_child(args.child, json.loads(args.child_args), json.loads(args.child_overrides), args.out, args.scratch)
        return 0
    only = [n for n in args.only.split(",") if n]
    unknown = set(only) - set(by_name())
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    run, code = run_suite(args.quick, only, args.results_dir)
    if run["failed"]:
        print(f"[bench] FAILED: {', '.join(run['failed'])}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
