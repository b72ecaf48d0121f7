"""`make run`'s launcher: starts everything, stops everything on SIGTERM/SIGINT, leaves nothing behind."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest

from services.launcher.mesh import ROOT
from services.launcher.probes import free_port

pytestmark = pytest.mark.e2e


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        # SO_REUSEADDR as servers use it: TIME_WAIT leftovers of closed connections do not count.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@pytest.mark.parametrize(("stop_signal", "with_demo"), [(signal.SIGTERM, True), (signal.SIGINT, False)])
def test_launcher_starts_mesh_and_stops_cleanly(tmp_path, stop_signal, with_demo):
    names = ("ORCHESTRATOR", "RAG", "NLP", "GRAPH", "OPENAI_API", "GATEWAY", "GATEWAY_STATS",
             "ORCHESTRATOR_METRICS", "RAG_METRICS", "NLP_METRICS", "GRAPH_METRICS")
    ports = {name: free_port() for name in names}
    env = dict(os.environ, DOCUTHINKER_DATA_DIR=str(tmp_path / "data"), DOCUTHINKER_LOG_DIR=str(tmp_path / "logs"),
               DOCUTHINKER_SHUTDOWN_GRACE_S="1", **{f"DOCUTHINKER_{k}_PORT": str(v) for k, v in ports.items()})
    # Without the demo, with the local Prometheus (the launcher's option) scraping the mesh.
    prometheus_port = free_port()
    extra = [] if with_demo else ["--no-demo", "--prometheus", "--prometheus-port", str(prometheus_port)]
    argv = [sys.executable, "-m", "services.launcher", *extra]
    launcher = subprocess.Popen(argv, cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    deadline = time.monotonic() + 240
    for line in launcher.stdout:
        lines.append(line)
        if "press Ctrl-C to stop" in line or time.monotonic() > deadline:
            break
    output = "".join(lines)
    assert "all services SERVING" in output and "press Ctrl-C" in output, output
    assert f"http://127.0.0.1:{ports['GATEWAY']}" in output
    assert f"rag           metrics:       http://127.0.0.1:{ports['RAG_METRICS']}/metrics" in output, output
    assert f"http://127.0.0.1:{ports['GATEWAY_STATS']}/stats/prometheus" in output
    if not with_demo:
        assert f"Prometheus (scraping the mesh): http://127.0.0.1:{prometheus_port}" in output, output
        ports["PROMETHEUS"] = prometheus_port
    if with_demo:
        # The main job on embedded defaults: a sample document ingested and a question answered from it, cited.
        assert "demo failed" not in output, output
        assert "every March" in output and "twice a year" in output, output
        assert "[1] solar-cooperative-handbook.md" in output and "[2] solar-cooperative-handbook.md" in output, output
        assert "Maintenance and safety" in output, output  # citations carry the heading path of Markdown spans
    children = psutil.Process(launcher.pid).children(recursive=True)
    assert len(children) >= 5  # four services and Envoy
    assert {name for name in ("orchestrator", "rag", "nlp", "graph")} <= {
        p for p in ("orchestrator", "rag", "nlp", "graph") if (tmp_path / "logs" / f"{p}.log").exists()
    }

    launcher.send_signal(stop_signal)
    rest, _ = launcher.communicate(timeout=60)
    assert launcher.returncode == 0, output + rest
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, f"orphans left: {alive}"
    for name, port in ports.items():
        assert _port_free(port), f"{name} port {port} still bound"
