"""The mesh's containers on the stand-in hosts: who runs where, their secrets as files, start, wait, logs, removal.

``dt40-h1``: PostgreSQL (pgserver's PostgreSQL 16 + pgvector, from the image), the graph service, the orchestrator
and Envoy. ``dt40-h2`` and ``dt40-h3``: a rag and an nlp replica each. PostgreSQL and the graph sit with the gateway
so that the rag hosts are alike (the scaling run) and either can be cut without taking shared state away. The graph
is the embedded LadybugDB backend: no Bolt server ships as a Debian package (ArcadeDB comes only as a PyPI package
with its own Java), so the Bolt backend is not run here.

Every container has the label ``docuthinker.cluster=dt40`` and its host in ``docuthinker.host``: ``remove_all``
finds them by it (also those of a run that failed halfway) and removes each from inside its host's namespace.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import secrets
import shutil
import subprocess
import time

from tools.cluster import IMAGE, PODMAN_ENV, REPO, net

STATE = REPO / "data" / "cluster"
LOGS = REPO / "logs" / "cluster"
LABEL = "docuthinker.cluster=dt40"
UID = 10001
H1, H2, H3 = net.HOSTS
PG_PORT = 5432
PG_USER = "docuthinker"
SECRETS_IN = "/run/docuthinker"


@dataclasses.dataclass(frozen=True)
class Container:
    name: str
    host: str
    command: tuple[str, ...]
    memory: str
    cpuset: str = ""
    metrics_port: int = 0

    @property
    def address(self) -> str:
        return net.address(self.host)


def _service(name: str, host: str, module: str, memory: str, metrics_port: int, cpuset: str = "") -> Container:
    return Container(name, host, ("python", "-m", module), memory, cpuset, metrics_port)


PROFILES = ("full", "drill")
"""``full``: the whole mesh; ``drill``: PostgreSQL, the two rag replicas and Envoy (what the CI drill needs: uploads
and searches go from Envoy straight to rag), which starts in a fraction of the time."""


def containers(rag_cpusets: tuple[str, str] = ("", ""), profile: str = "full") -> list[Container]:
    """The cluster's containers in start order (PostgreSQL first: the services connect at start)."""
    every = [
        Container("dt40-postgres", H1, ("sh", "/app/deploy/podman/postgres.sh"), "1g"),
        _service("dt40-graph", H1, "services.graph", "1536m", 9463),
        _service("dt40-orchestrator", H1, "services.orchestrator", "3g", 9460),
        _service("dt40-rag-1", H2, "services.rag", "3g", 9461, rag_cpusets[0]),
        _service("dt40-nlp-1", H2, "services.nlp", "3g", 9462),
        _service("dt40-rag-2", H3, "services.rag", "3g", 9461, rag_cpusets[1]),
        _service("dt40-nlp-2", H3, "services.nlp", "3g", 9462),
        Container("dt40-envoy", H1, ("envoy", "-c", f"{SECRETS_IN}/envoy/envoy.yaml", "--disable-hot-restart",
                                     "--log-level", "warn", "--drain-time-s", "5"), "512m"),
    ]
    if profile == "drill":
        return [c for c in every if c.name in ("dt40-postgres", "dt40-rag-1", "dt40-rag-2", "dt40-envoy")]
    return every


def podman(host: str | None, *args: str, timeout: float = 120, check: bool = True) -> str:
    """podman inside ``host``'s network namespace (nsenter keeps the cgroups runc needs), or outside any."""
    prefix = ["nsenter", f"--net={net.netns_path(host)}"] if host else []
    done = subprocess.run([*prefix, "podman", *args], capture_output=True, text=True, timeout=timeout, check=False,
                          env={**os.environ, **PODMAN_ENV})
    if check and done.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args[:3])} ... on {host or 'the machine'} failed: "
                           f"{done.stderr.strip()[-800:]}")
    return done.stdout


def image_exists(image: str = IMAGE) -> bool:
    try:
        done = subprocess.run(["podman", "image", "exists", image], env={**os.environ, **PODMAN_ENV},
                              capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def targets() -> dict[str, str]:
    rags = [c for c in containers() if c.name.startswith("dt40-rag")]
    nlps = [c for c in containers() if c.name.startswith("dt40-nlp")]
    return {
        "DOCUTHINKER_ORCHESTRATOR_TARGET": f"{net.address(H1)}:50050",
        "DOCUTHINKER_RAG_TARGET": ",".join(f"{c.address}:50051" for c in rags),
        "DOCUTHINKER_NLP_TARGET": ",".join(f"{c.address}:50052" for c in nlps),
        "DOCUTHINKER_GRAPH_TARGET": f"{net.address(H1)}:50053",
        # Not run on the stand-in hosts: Envoy keeps its route, which answers 503.
        "DOCUTHINKER_OPENAI_API_TARGET": f"{net.address(H1)}:50054",
    }


def environment() -> dict[str, str]:
    return {
        "DOCUTHINKER_HOST": "0.0.0.0",
        **targets(),
        "DOCUTHINKER_MESH_CREDENTIAL_FILE": f"{SECRETS_IN}/mesh/credential",
        "DOCUTHINKER_AUTH_JWKS_FILE": f"{SECRETS_IN}/auth/jwks.json",
        "DOCUTHINKER_STORE_BACKEND": "postgres",
        # The password from a file (libpq's passfile), never in the environment.
        "DOCUTHINKER_POSTGRES_DSN": f"postgresql://{PG_USER}@{net.address(H1)}:{PG_PORT}/docuthinker"
                                    f"?passfile={SECRETS_IN}/postgres/pgpass&connect_timeout=5",
        "DOCUTHINKER_GATEWAY_ADMIN_SOCKET": "/tmp/envoy-admin.sock",
        "DOCUTHINKER_GATEWAY_STATS_PORT": "9902",
        # A dead replica's ingestion is taken over once its lease runs out: 10 s keeps the drill short.
        "DOCUTHINKER_RAG_INGEST_LEASE_S": os.environ.get("DOCUTHINKER_RAG_INGEST_LEASE_S", "10"),
        "DOCUTHINKER_LOG_LEVEL": "INFO",
        "OMP_WAIT_POLICY": "PASSIVE",
    }


def _private(path: pathlib.Path, text: str, mode: int = 0o400) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chown(path, UID, UID)
    path.chmod(mode)


def prepare_secrets(state: pathlib.Path = STATE) -> dict[str, pathlib.Path]:
    """The mesh credential, the JWT signing key and JWKS, PostgreSQL's password: files, made once per cluster
    (``state``/secrets, mounted read-only into every container; the signing key stays in ``state``/signing)."""
    from gateway.auth import keygen

    secrets_dir = state / "secrets"
    if not (secrets_dir / "mesh" / "credential").exists():
        _private(secrets_dir / "mesh" / "credential", secrets.token_urlsafe(48))
        password = secrets.token_urlsafe(24)
        _private(secrets_dir / "postgres" / "password", password)
        _private(secrets_dir / "postgres" / "pgpass", f"*:*:*:{PG_USER}:{password}\n", 0o600)
        _, jwks = keygen(state / "signing")  # the private key stays here with the drills, who mint tokens
        (secrets_dir / "auth").mkdir()
        shutil.copy(jwks, secrets_dir / "auth" / "jwks.json")
        (secrets_dir / "envoy").mkdir(exist_ok=True)
        for path in (secrets_dir, *secrets_dir.rglob("*")):
            os.chown(path, UID, UID)
    return {"secrets": secrets_dir, "signing_key": state / "signing" / "signing-key.pem"}


def postgres_password() -> str:
    return (STATE / "secrets" / "postgres" / "password").read_text().strip()


def _volume(name: str) -> pathlib.Path:
    path = STATE / "volumes" / name
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, UID, UID)
    return path


def start(container: Container, image: str = IMAGE) -> None:
    env = [f"--env={k}={v}" for k, v in environment().items()]
    data = "/pgdata" if container.name == "dt40-postgres" else "/data"
    args = ["run", "--detach", "--name", container.name, "--hostname", container.name, "--network", "host",
            "--label", LABEL, "--label", f"docuthinker.host={container.host}", "--memory", container.memory,
            "--volume", f"{STATE / 'secrets'}:{SECRETS_IN}:ro", "--volume", f"{_volume(container.name)}:{data}",
            # As the Kubernetes manifests run them: read-only root (podman mounts tmpfs on /tmp and /run), no
            # capabilities, no privilege gain.
            "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
            *(["--cpuset-cpus", container.cpuset] if container.cpuset else []),
            # PostgreSQL's SIGTERM is a "smart" shutdown that waits for every client to leave (the pools never do,
            # so podman would SIGKILL it after its grace time); SIGINT is the fast, clean one an operator uses.
            *(["--stop-signal", "SIGINT"] if container.name == "dt40-postgres" else []), *env, image, *container.command]
    podman(container.host, *args)


def render_envoy(image: str = IMAGE, state: pathlib.Path = STATE, env_vars: dict[str, str] | None = None,
                 host: str | None = H1) -> None:
    """Envoy's config rendered by the image's own code for these targets (as the Kubernetes init container does)."""
    env = [f"--env={k}={v}" for k, v in (env_vars or environment()).items()]
    out = state / "secrets" / "envoy"
    labels = ["--label", LABEL, "--label", f"docuthinker.host={host}"] if host else []
    podman(host, "run", "--rm", "--network", "none", *labels,
           "--volume", f"{state / 'secrets'}:{SECRETS_IN}:ro", "--volume", f"{out}:/out", *env, image,
           "python", "-m", "gateway.envoy_config", "--out", "/out/envoy.yaml", timeout=180)
    # The rendered file was written to the writable mount; Envoy reads it from the read-only secrets mount.
    if not (out / "envoy.yaml").exists():
        raise RuntimeError("the Envoy config was not rendered")


def healthy(container: Container) -> bool:
    """The image's HEALTHCHECK, run once now (podman's timers need systemd, which these machines do not run)."""
    try:
        podman(container.host, "healthcheck", "run", container.name, timeout=30)
        return True
    except (RuntimeError, subprocess.TimeoutExpired):
        return False


def wait_healthy(wanted: list[Container], timeout_s: float = 420) -> float:
    """Seconds until every container in ``wanted`` passes its health check; raises at ``timeout_s``."""
    started = time.monotonic()
    pending = list(wanted)
    while pending:
        pending = [c for c in pending if not healthy(c)]
        if not pending:
            break
        dead = [c.name for c in pending if state(c) not in ("running", "created", "")]
        if dead:
            raise RuntimeError(f"containers exited before they were healthy: {dead} (logs in {LOGS})")
        if time.monotonic() - started > timeout_s:
            raise TimeoutError(f"not healthy after {timeout_s:.0f} s: {[c.name for c in pending]}")
        time.sleep(3)
    return time.monotonic() - started


def state(container: Container) -> str:
    out = podman(container.host, "inspect", "--format", "{{.State.Status}}", container.name, check=False, timeout=30)
    return out.strip()


def listed() -> list[tuple[str, str]]:
    """(name, host) of every container with the cluster's label, running or not."""
    out = podman(None, "ps", "--all", "--filter", f"label={LABEL}", "--format", "json", timeout=60)
    return [(c["Names"][0], (c.get("Labels") or {}).get("docuthinker.host", "")) for c in json.loads(out or "[]")]


def collect_logs() -> pathlib.Path:
    LOGS.mkdir(parents=True, exist_ok=True)
    for name, host in listed():
        on = host if host in net.namespaces() else None
        text = podman(on, "logs", name, check=False, timeout=60)
        err = subprocess.run(["podman", "logs", name], capture_output=True, text=True, timeout=60, check=False,
                             env={**os.environ, **PODMAN_ENV}).stderr if not text else ""
        (LOGS / f"{name}.log").write_text(text + err)
    return LOGS


def collect_metrics() -> None:
    """Every service's /metrics and Envoy's stats, read over the cluster network from this machine's veth."""
    import httpx

    out = LOGS / "metrics"
    out.mkdir(parents=True, exist_ok=True)
    urls = {c.name: f"http://{c.address}:{c.metrics_port}/metrics" for c in containers() if c.metrics_port}
    urls["dt40-envoy"] = f"http://{net.address(H1)}:9902/stats/prometheus"
    for name, url in urls.items():
        try:
            (out / f"{name}.prom").write_text(httpx.get(url, timeout=5).text)
        except httpx.HTTPError as exc:
            (out / f"{name}.prom").write_text(f"# not read: {exc!r}\n")


def remove_all() -> list[str]:
    removed = []
    spaces = net.namespaces()
    for name, host in listed():
        podman(host if host in spaces else None, "rm", "--force", "--time", "5", name, check=False, timeout=60)
        removed.append(name)
    return removed
