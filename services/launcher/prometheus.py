"""A local Prometheus server scraping the mesh (``DOCUTHINKER_PROMETHEUS=1 make run``, and the e2e tests).

It runs Debian's ``prometheus`` binary (tools/system_packages.sh installs it) with a scrape config
rendered for the running mesh (its actual ports) and the alert rules of deploy/observability.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import yaml

from services.launcher.mesh import ROOT, Mesh
from services.launcher.probes import free_port
from services.runtime.child_exec import spawn_argv

RULES_FILE = ROOT / "deploy" / "observability" / "alerts.yml"


def binary() -> str | None:
    return shutil.which("prometheus")


def scrape_config(mesh: Mesh, interval_s: float = 15.0, rules: pathlib.Path | None = RULES_FILE) -> dict:
    """A Prometheus config with one job per service and one for Envoy, at the mesh's ports."""
    jobs = []
    for name, url in mesh.metrics_urls().items():
        parts = urlsplit(url)
        jobs.append({
            "job_name": "envoy" if name == "gateway" else name,
            "metrics_path": parts.path,
            "static_configs": [{"targets": [parts.netloc], "labels": {"service": name}}],
        })
    config = {
        "global": {"scrape_interval": f"{interval_s:g}s", "evaluation_interval": f"{interval_s:g}s"},
        "scrape_configs": jobs,
    }
    if rules is not None:
        config["rule_files"] = [str(rules)]
    return config


@dataclass
class LocalPrometheus:
    """One Prometheus process on 127.0.0.1 with its own storage directory."""

    mesh: Mesh
    work_dir: pathlib.Path
    port: int = 0
    interval_s: float = 15.0
    _proc: subprocess.Popen | None = field(init=False, default=None)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> LocalPrometheus:
        exe = binary()
        if exe is None:
            raise RuntimeError("prometheus is not installed (apt-get install prometheus; see tools/system_packages.sh)")
        self.port = self.port or free_port()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        config = self.work_dir / "prometheus.yml"
        config.write_text(yaml.safe_dump(scrape_config(self.mesh, self.interval_s), sort_keys=False))
        log = open(self.work_dir / "prometheus.log", "ab")
        self._proc = subprocess.Popen(
            spawn_argv([exe, f"--config.file={config}", f"--storage.tsdb.path={self.work_dir / 'tsdb'}",
                        f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1d"]),
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self._proc.returncode}; see {self.work_dir}/prometheus.log")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as reply:
                    if reply.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"prometheus not ready after {timeout_s}s")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def api(self, path: str, **params) -> dict:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as reply:
            body = json.load(reply)
        if body.get("status") != "success":
            raise RuntimeError(f"prometheus {path}: {body}")
        return body["data"]

    def query(self, promql: str) -> list[dict]:
        return self.api("query", query=promql)["result"]

    def targets(self) -> list[dict]:
        return self.api("targets")["activeTargets"]

    def __enter__(self) -> LocalPrometheus:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
