"""Hostile-mesh probes at the gateway's door: what anyone who reaches it can see or provoke.

- ``credential``: every admin endpoint of Envoy (over its unix socket) and the rendered config, searched for
  the mesh credential; the admin socket's mode; no admin TCP port.
- ``headers``: every answer's headers, searched for the proxy's name and internals.
- ``flood``: requests without a token (and with a forged one) from one address, rate-limited with 429.
"""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx

from services.runtime import mesh_auth

from .common import TENANT, admin_get, status_body

ADMIN_ENDPOINTS = ("/config_dump", "/config_dump?include_eds", "/clusters", "/clusters?format=json", "/listeners",
                   "/server_info", "/stats", "/stats?format=json", "/stats/prometheus", "/runtime", "/certs",
                   "/memory", "/init_dump", "/ready", "/hot_restart_version", "/help", "/stats/recentlookups")
LEAKY_HEADERS = re.compile(r"^(server|x-powered-by|x-envoy-.*|grpc-.*|via)$")


# -- the mesh credential -------------------------------------------------------------------
def credential(mesh) -> dict:
    """Envoy's admin endpoints and rendered config searched for the mesh credential."""
    secret = mesh_auth.read_credential(mesh.settings.mesh_credential_file)
    assert secret, "the mesh has no credential to look for"
    found = {}
    statuses = {}
    for path in ADMIN_ENDPOINTS:
        reply = admin_get(mesh, path)
        statuses[path] = reply.status_code
        found[path] = secret in reply.text
    config = (mesh.log_dir / "envoy.yaml").read_text()
    mode = os.stat(mesh.admin.socket_path).st_mode if hasattr(mesh, "admin") else 0
    return {
        "endpoints_checked": len(ADMIN_ENDPOINTS),
        "endpoints_answered": sum(1 for s in statuses.values() if s == 200),
        "credential_found": sum(found.values()),
        "credential_found_at": sorted(p for p, hit in found.items() if hit),
        "config_file_has_credential": secret in config,
        "admin_is_unix_socket": stat.S_ISSOCK(mode),
        "admin_tcp_port": getattr(mesh, "admin_url", None),
        "admin_socket_mode": oct(stat.S_IMODE(mode)),
        # Envoy's TCP listeners: the public one and the stats-only one, no admin port among them.
        "tcp_listeners": sorted(
            f"{a['socket_address']['address']}:{a['socket_address']['port_value']}"
            for listener in admin_get(mesh, "/listeners", {"format": "json"}).json()["listener_statuses"]
            for a in [listener["local_address"]] if "socket_address" in a),
    }


# -- floods and headers --------------------------------------------------------------------
def flood(mesh, anonymous: int = 300, forged: int = 1500, threads: int = 8) -> dict:
    """From one address: ``anonymous`` requests without a token (their own, smaller budget), then ``forged`` ones
    with a forged token from ``threads`` clients at once (the per-address budget, counted before authentication);
    then, once the budget has refilled, one with a real token."""
    counts: Counter = Counter()
    lock = threading.Lock()
    url = f"{mesh.base_url}/v1/documents"

    def send(client: httpx.Client, kind: str, headers: dict[str, str], n: int) -> None:
        for _ in range(n):
            reply = client.get(url, headers=headers)
            limited_ok = reply.status_code == 429 and status_body(reply) and reply.headers.get("retry-after") == "1"
            with lock:
                counts[f"{kind}:{reply.status_code}"] += 1
                counts[f"{kind}:429_google_rpc_status"] += int(limited_ok)

    started = time.monotonic()
    with httpx.Client(timeout=10) as client:
        send(client, "no_token", {}, anonymous)
    with ThreadPoolExecutor(threads) as pool:
        clients = [httpx.Client(timeout=10) for _ in range(threads)]
        list(pool.map(lambda c: send(c, "forged_token", {"authorization": "Bearer not.a.token"}, forged // threads),
                      clients))
        for c in clients:
            c.close()
    counts["flood_s"] = round(time.monotonic() - started, 1)
    time.sleep(2.5)  # the per-address budget refills (client_rps a second)
    with mesh.http(timeout=30, headers={"x-tenant-id": TENANT}) as http:
        counts[f"with_token_after:{http.get('/v1/documents').status_code}"] += 1
    return dict(counts)


def headers(mesh) -> dict:
    """The headers of answers of every kind (Envoy's own, a service's, a stream, a static file, the chat API)."""
    replies = {}
    with mesh.http(timeout=60, headers={"x-tenant-id": TENANT}) as http:
        replies["search"] = http.post("/v1/search", json={"query": "pump"})
        replies["upload_stream"] = http.post("/v1/documents", params={"filename": "h.txt"},
                                             content=b"Headers probe text about pumps. " * 20,
                                             headers={"content-type": "text/plain"})
        replies["not_found"] = http.get("/v1/no-such-route")
        replies["service_error"] = http.get("/v1/documents/nope")
        replies["models"] = http.get("/v1/models")
        replies["health"] = http.get("/v1/health")
    with httpx.Client(base_url=mesh.base_url, timeout=30) as anonymous:
        replies["unauthenticated"] = anonymous.get("/v1/documents")
        replies["web_app"] = anonymous.get("/")
    leaked = {name: sorted(k for k in reply.headers if LEAKY_HEADERS.match(k.lower()))
              for name, reply in replies.items()}
    return {"answers": len(replies), "leaked": {n: h for n, h in leaked.items() if h},
            "answers_with_leaks": sum(1 for h in leaked.values() if h)}

