"""A service told to stop exits once its grace periods are over, even with a worker thread still busy: it is not
left for its supervisor to kill (a stopped nlp with a model warm-up in a thread used to wait for it)."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
NEVER_S = 120.0  # the busy thread waits an hour: an exit before this came without it


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_stopped_service_exits_without_waiting_for_a_busy_worker_thread(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "gen"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "tests.runtime.stuck_worker", str(_free_port()), str(tmp_path)],
                            cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if '"msg": "serving"' in line:
                break
        assert proc.poll() is None, "".join(lines)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(NEVER_S)
        lines += proc.stderr.readlines()
    finally:
        proc.kill()
        proc.wait()
    assert code == 0, "".join(lines)
    messages = [json.loads(line)["msg"] for line in lines if line.startswith("{")]
    assert messages[-2:] == ["stopped", "worker threads still busy after the grace period: exiting without them"]
