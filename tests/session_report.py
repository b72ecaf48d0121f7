"""A JSON record of one pytest session: every test's outcome and phase durations, the slowest tests and
modules, and the machine's load while it ran (``--session-report PATH``; registered by tests/conftest.py).

``make test`` writes one (logs/test-report.json) beside pytest's own ``--durations`` table, so a CI run
leaves its timings behind; ``tools/test_repeat.py`` reads one per run to tell which test failed in which.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import sys
import time
from collections import defaultdict

import pytest

PHASES = ("setup", "call", "teardown")


class SessionReport:
    def __init__(self, path: pathlib.Path, top: int) -> None:
        self.path = path
        self.top = top
        self.tests: dict[str, dict] = {}
        self._started = time.time()
        self._clock = time.monotonic()
        self._load = os.getloadavg()

    @staticmethod
    def addoption(parser: pytest.Parser) -> None:
        group = parser.getgroup("session report")
        group.addoption("--session-report", metavar="PATH", default=None,
                        help="write every test's outcome and phase durations, the slowest tests and the load as JSON")
        group.addoption("--session-report-top", metavar="N", type=int, default=30,
                        help="how many of the slowest tests and modules the report lists (default 30)")

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        test = self.tests.setdefault(report.nodeid, {"outcome": "passed", **{f"{p}_s": 0.0 for p in PHASES}})
        test[f"{report.when}_s"] = round(report.duration, 3)
        if hasattr(report, "wasxfail"):
            test["outcome"] = "xfailed" if report.skipped else "xpassed"
        elif report.failed:
            test["outcome"] = "failed" if report.when == "call" else "error"
            test["phase"] = report.when
            test["message"] = _message(report)
        elif report.skipped and test["outcome"] == "passed":
            test["outcome"] = "skipped"

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        for test in self.tests.values():
            test["total_s"] = round(sum(test[f"{p}_s"] for p in PHASES), 3)
        counts: dict[str, int] = defaultdict(int)
        modules: dict[str, float] = defaultdict(float)
        for nodeid, test in self.tests.items():
            counts[test["outcome"]] += 1
            modules[nodeid.split("::")[0]] += test["total_s"]
        slowest = sorted(self.tests.items(), key=lambda kv: kv[1]["total_s"], reverse=True)[: self.top]
        report = {
            "started": datetime.datetime.fromtimestamp(self._started, datetime.UTC).isoformat(timespec="seconds"),
            "wall_s": round(time.monotonic() - self._clock, 1),
            "exit_status": int(exitstatus),
            "argv": sys.argv[1:],
            "cpus": os.cpu_count(),
            "load_average_start": [round(x, 2) for x in self._load],
            "load_average_end": [round(x, 2) for x in os.getloadavg()],
            "counts": dict(sorted(counts.items())),
            "slowest": [{"test": nodeid, **{k: test[k] for k in ("total_s", "setup_s", "call_s", "teardown_s")}}
                        for nodeid, test in slowest],
            "slowest_modules": [{"module": m, "total_s": round(s, 1)}
                                for m, s in sorted(modules.items(), key=lambda kv: kv[1], reverse=True)[: self.top]],
            "tests": self.tests,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(report, indent=1) + "\n")


def _message(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    return " ".join(text.split())[:500]


def configure(config: pytest.Config) -> None:
    path = config.getoption("--session-report")
    if path:
        config.pluginmanager.register(SessionReport(pathlib.Path(path), config.getoption("--session-report-top")),
                                      "docuthinker-session-report")
