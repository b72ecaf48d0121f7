"""Runs every benchmark and writes one JSON, a Markdown report and PNG plots (``make bench`` / ``bench-quick``).

Each benchmark of ``bench.suite`` runs in its own process (``python -m bench.run --child``),
with a time limit; the child points the benchmark's RESULTS directory at a scratch folder, so
a combined run never overwrites the per-benchmark result files their owners commit, and
hands its JSON back. A benchmark that fails or times out is recorded as failed (with the end
of its log), the others still run, and the exit code is 1. Logs: logs/bench/<stamp>/<name>.log.

Outputs, in bench/results/: ``<date>-<host>[-quick].json`` (every result plus the run's
environment), ``<date>-<host>[-quick].md`` (the report) and ``<date>-<host>[-quick]-*.png``.

    python -m bench.run --quick | --full [--only ingest,serving]
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

from bench.suite import SUITE, Benchmark, by_name

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
LOGS = ROOT / "logs" / "bench"
LOG_TAIL_LINES = 25


# -- child side ------------------------------------------------------------------------
def run_child(name: str, quick: bool, scratch: pathlib.Path, out: pathlib.Path) -> None:
    bench = by_name()[name]
    for target, value in bench.overrides(quick).items():
        module_name, attribute = target.rsplit(".", 1)
        module = importlib.import_module(module_name)
        getattr(module, attribute)  # a renamed constant must fail here, not be ignored
        setattr(module, attribute, value)
    module = importlib.import_module(bench.module)
    results = scratch / f"results-{name}"
    results.mkdir(parents=True, exist_ok=True)
    module.RESULTS = results
    sys.argv = [bench.module, *bench.args(quick, scratch)]
    module.main()
    written = sorted(results.glob("*.json"), key=lambda p: p.stat().st_mtime)
    if not written:
        raise SystemExit(f"{name} wrote no JSON result")
    shutil.copyfile(written[-1], out)


# -- parent side -----------------------------------------------------------------------
def _tail(path: pathlib.Path) -> list[str]:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [ln for ln in lines if "Loading weights" not in ln][-LOG_TAIL_LINES:]


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_one(bench: Benchmark, quick: bool, scratch: pathlib.Path, log_dir: pathlib.Path) -> dict:
    out = scratch / f"{bench.name}.json"
    log = log_dir / f"{bench.name}.log"
    argv = [sys.executable, "-m", "bench.run", "--child", bench.name, "--scratch", str(scratch), "--out", str(out),
            "--quick" if quick else "--full"]
    entry: dict = {"module": bench.module, "what": bench.what, "args": bench.args(quick, scratch),
                   "overrides": dict(bench.overrides(quick)), "timeout_s": bench.timeout_s(quick),
                   "log": str(log.relative_to(ROOT))}
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


def run_suite(quick: bool, only: list[str] | None = None, results_dir: pathlib.Path = RESULTS) -> tuple[dict, int]:
    from bench.environment import describe

    selected = [b for b in SUITE if not only or b.name in only]
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    log_dir = LOGS / stamp
    log_dir.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now(dt.timezone.utc)
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
    print(f"[bench] wrote {json_path} and {base}.md ({len(run['plots'])} plots)", flush=True)
    return json_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--quick", action="store_true", help="reduced sizes (about five minutes, warm caches)")
    size.add_argument("--full", action="store_true", help="the real sizes (hours on two cores)")
    parser.add_argument("--only", default="", help="comma-separated benchmark names: " + ",".join(by_name()))
    parser.add_argument("--results-dir", type=pathlib.Path, default=RESULTS, help="where the outputs go")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=pathlib.Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=pathlib.Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        run_child(args.child, args.quick, args.scratch, args.out)
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
