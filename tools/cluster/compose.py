"""``make compose-up`` / ``compose-down``: the same image as a single-host production setup with podman-compose.

deploy/compose/compose.yaml runs every process in its own container on one podman network (names resolve between
them), PostgreSQL with pgvector from the image as the shared store, Envoy published on 127.0.0.1 only. Before
``podman-compose up`` this makes the secrets as files (data/compose/secrets, mounted read-only) and renders Envoy's
config with the image's own code for the compose targets (read from the compose file, one list of settings).
"""

from __future__ import annotations

import os
import subprocess
import time
from typing import Any

import httpx
import yaml

from tools.cluster import PODMAN_ENV, REPO, mesh

COMPOSE_FILE = REPO / "deploy" / "compose" / "compose.yaml"
STATE = REPO / "data" / "compose"
PROJECT = "docuthinker"
SERVICES = ("postgres", "graph", "rag", "nlp", "orchestrator", "openai-api", "gateway")


def port() -> int:
    return int(os.environ.get("DOCUTHINKER_COMPOSE_PORT", "18080"))


def _compose(*args: str, timeout: float = 600) -> str:
    done = subprocess.run(["podman-compose", "-f", str(COMPOSE_FILE), "-p", PROJECT, *args], capture_output=True,
                          text=True, timeout=timeout, check=False, env={**os.environ, **PODMAN_ENV})
    if done.returncode != 0:
        raise RuntimeError(f"podman-compose {' '.join(args)} failed: {(done.stderr or done.stdout)[-1500:]}")
    return done.stdout


def _environment() -> dict[str, str]:
    spec = yaml.safe_load(COMPOSE_FILE.read_text())
    return {k: str(v) for k, v in spec["x-service"]["environment"].items()}


def _healthy(name: str) -> bool:
    done = subprocess.run(["podman", "healthcheck", "run", name], capture_output=True, timeout=30, check=False,
                          env={**os.environ, **PODMAN_ENV})
    return done.returncode == 0


def up(timeout_s: float = 600) -> dict[str, Any]:
    if not mesh.image_exists():
        raise SystemExit("no image: run `make image` first")
    started = time.monotonic()
    mesh.prepare_secrets(STATE)
    for volume in ("pgdata", "graph"):
        (STATE / volume).mkdir(parents=True, exist_ok=True)
        os.chown(STATE / volume, mesh.UID, mesh.UID)
    if not (STATE / "secrets" / "envoy" / "envoy.yaml").exists():
        mesh.render_envoy(state=STATE, env_vars=_environment(), host=None)
    _compose("up", "-d")
    pending = [f"{PROJECT}_{service}_1" for service in SERVICES]
    while pending and time.monotonic() - started < timeout_s:
        pending = [name for name in pending if not _healthy(name)]
        time.sleep(3 if pending else 0)
    if pending:
        raise TimeoutError(f"not healthy after {timeout_s:.0f} s: {pending} (podman logs NAME)")
    print(f"compose up: {len(SERVICES)} containers healthy in {time.monotonic() - started:.0f} s; "
          f"gateway http://127.0.0.1:{port()}; mint a token with: python -m services.launcher token "
          f"--key {STATE / 'signing' / 'signing-key.pem'} --tenant NAME")
    return {"containers": len(SERVICES), "healthy_s": round(time.monotonic() - started, 1)}


def smoke() -> dict[str, Any]:
    """One upload and one search through the published gateway port."""
    from gateway.auth import AuthSettings, mint

    token = mint(STATE / "signing" / "signing-key.pem", "compose", ttl_s=600, auth=AuthSettings(), subject="smoke")
    gateway = httpx.Client(base_url=f"http://127.0.0.1:{port()}", timeout=120,
                           headers={"authorization": f"Bearer {token}"})
    reply = gateway.post("/v1/documents:ingest", params={"filename": "compose.txt"},
                         content=b"The compose smoke document about the Orrin canal. Marker zyxcomposeqv.",
                         headers={"content-type": "text/plain"})
    hits = gateway.post("/v1/search", json={"query": "zyxcomposeqv", "top_k": 3})
    figures = {"upload": reply.status_code, "search": hits.status_code,
               "hits_with_marker": sum("zyxcomposeqv" in h.get("text", "") for h in hits.json().get("results", []))
               if hits.status_code == 200 else 0}
    if not (reply.status_code == 200 and figures["hits_with_marker"]):
        raise SystemExit(f"compose smoke failed: {figures} {reply.text[:300]}")
    return figures


def down() -> None:
    _compose("down", timeout=300)
    # podman-compose 1.0 leaves the project's network behind.
    subprocess.run(["podman", "network", "rm", f"{PROJECT}_default"], capture_output=True, timeout=60, check=False,
                   env={**os.environ, **PODMAN_ENV})
    print(f"compose down; data and secrets stay in {STATE} (remove it to start afresh)")
