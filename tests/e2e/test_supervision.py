"""`make run` supervises its children: a killed service is restarted while the rest keep serving,
its death is reported in /v1/health, and a child past its restart budget stays down alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import psutil
import pytest

from services.launcher.mesh import ROOT
from services.launcher.probes import free_port

pytestmark = pytest.mark.e2e


def _child(launcher: subprocess.Popen, module: str) -> psutil.Process:
    for proc in psutil.Process(launcher.pid).children(recursive=True):
        try:
            if f"services.{module}" in proc.cmdline():
                return proc
        except psutil.NoSuchProcess:
            continue
    raise AssertionError(f"no {module} child")


def _health(base: str) -> dict[str, dict]:
    reply = httpx.get(f"{base}/v1/health", timeout=5)
    assert reply.status_code == 200, reply.text
    return {s["name"]: s for s in reply.json()["services"]}


def _until(condition, what: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = condition()
        except (httpx.HTTPError, AssertionError):
            value = None
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_killed_service_is_restarted_and_a_child_past_its_budget_stays_down_alone(tmp_path):
    names = ("ORCHESTRATOR", "RAG", "NLP", "GRAPH", "OPENAI_API", "GATEWAY", "GATEWAY_STATS",
             "ORCHESTRATOR_METRICS", "RAG_METRICS", "NLP_METRICS", "GRAPH_METRICS")
    ports = {name: free_port() for name in names}
    env = dict(os.environ, DOCUTHINKER_DATA_DIR=str(tmp_path / "data"), DOCUTHINKER_LOG_DIR=str(tmp_path / "logs"),
               DOCUTHINKER_SHUTDOWN_GRACE_S="1", DOCUTHINKER_LAUNCHER_RESTART_INITIAL_S="0.2",
               DOCUTHINKER_LAUNCHER_RESTART_BUDGET="1", DOCUTHINKER_LAUNCHER_RESTART_WINDOW_S="600",
               **{f"DOCUTHINKER_{k}_PORT": str(v) for k, v in ports.items()})
    launcher = subprocess.Popen([sys.executable, "-m", "services.launcher", "--no-demo"], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{ports['GATEWAY']}"
    try:
        lines = []
        for line in launcher.stdout:
            lines.append(line)
            if "press Ctrl-C to stop" in line:
                break
        assert "supervised:" in "".join(lines), "".join(lines)
        # Auth is on by default: an admin token is written for the CLI, and printed with a web-app URL carrying it.
        token_file = tmp_path / "data" / "auth" / "token"
        token = token_file.read_text().strip()
        assert token in "".join(lines) and f"{base}/#token={token}" in "".join(lines)
        assert token_file.stat().st_mode & 0o777 == 0o600
        assert (tmp_path / "data" / "auth" / "signing-key.pem").stat().st_mode & 0o777 == 0o600
        assert httpx.post(f"{base}/v1/search", json={"query": "anything"}, timeout=30).status_code == 401

        first_nlp = _child(launcher, "nlp")
        first_nlp.send_signal(signal.SIGKILL)
        # The others keep serving while nlp is down and restarted: rag answers a search through Envoy.
        search = httpx.post(f"{base}/v1/search", json={"query": "anything", "top_k": 1}, timeout=30,
                            headers={"authorization": f"Bearer {token}"})
        assert search.status_code == 200, search.text
        nlp = _until(lambda: (h := _health(base)["nlp"])["status"] == "SERVING" and h["restarts"] == 1 and h,
                     "nlp restarted and serving")
        assert "SIGKILL" in nlp["last_exit"] and nlp["supervisor_state"] == "running"
        assert _child(launcher, "nlp").pid != first_nlp.pid
        assert launcher.poll() is None

        # graph dies twice: the first death is restarted, the second is past the budget of 1.
        _child(launcher, "graph").send_signal(signal.SIGKILL)
        _until(lambda: _health(base)["graph"]["restarts"] == 1 and _health(base)["graph"]["status"] == "SERVING",
               "graph restarted once")
        _child(launcher, "graph").send_signal(signal.SIGTERM)
        graph = _until(lambda: (h := _health(base)["graph"])["supervisor_state"] == "given_up" and h,
                       "graph given up")
        assert graph["status"] == "UNREACHABLE" and graph["last_exit"] == "exited with code 0"  # a graceful stop it did not ask for
        assert launcher.poll() is None, "the launcher keeps the rest of the mesh running"
        assert _health(base)["rag"]["status"] == "SERVING"
        assert httpx.get(f"{base}/v1/health", timeout=5).json()["status"] == "DEGRADED"
    finally:
        children = psutil.Process(launcher.pid).children(recursive=True)
        launcher.send_signal(signal.SIGTERM)
        rest, _ = launcher.communicate(timeout=90)
        gone, alive = psutil.wait_procs(children, timeout=10)
        assert not alive, f"orphans left: {alive}"
    assert launcher.returncode == 0, rest
    assert "supervisor: nlp killed by SIGKILL" in rest or "supervisor: nlp killed by SIGKILL" in "".join(lines)
    assert not (tmp_path / "data" / "supervisor.json").exists()
