"""What the drills send through Envoy to the stand-in cluster: tokens, clients, documents, uploads, searches, a
search load, a seeded tenant, and the latency percentiles they report.

Callers are this machine's clients reaching Envoy at ``10.240.40.1:8080`` over its own veth into the switch.
"""

from __future__ import annotations

import statistics
import threading
import time

import httpx

from tools.cluster import mesh, net

GATEWAY = f"http://{net.address(mesh.H1)}:8080"


def token(tenant: str) -> str:
    from gateway.auth import AuthSettings, mint

    key = mesh.STATE / "signing" / "signing-key.pem"
    return mint(key, tenant, ttl_s=3 * 3600, auth=AuthSettings(), subject=f"drill-{tenant}")


def client(tenant: str, timeout: float = 30) -> httpx.Client:
    return httpx.Client(base_url=GATEWAY, timeout=timeout, headers={"authorization": f"Bearer {token(tenant)}"})



def text(subject: str, paragraphs: int, marker: str) -> str:
    return "\n\n".join(f"Folio {n} of the {subject}. The surveyor measured the depth of reach {n} at {n % 9 + 1} "
                       f"feet and noted {n % 5} barges moored at the wharf of mile {n}." for n in range(paragraphs)) \
        + f"\n\nMarker word {marker}."


def upload(gateway: httpx.Client, name: str, body: str, timeout: float = 300) -> httpx.Response:
    return gateway.post("/v1/documents:ingest", params={"filename": name}, content=body.encode(),
                        headers={"content-type": "text/plain"}, timeout=timeout)


def search(gateway: httpx.Client, query: str, timeout: float = 10) -> tuple[int, float]:
    """(HTTP status, or 0 for a client-side timeout or connection error; seconds)."""
    started = time.monotonic()
    try:
        status = gateway.post("/v1/search", json={"query": query, "top_k": 3}, timeout=timeout).status_code
    except httpx.HTTPError:
        status = 0
    return status, time.monotonic() - started


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50_ms": None, "p95_ms": None}
    ordered = sorted(values)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 1),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 1)}


def search_load(gateway: httpx.Client, seconds: float, workers: int, stop: threading.Event,
          log: list[tuple[float, int, float]], t0: float) -> None:
    def worker(n: int) -> None:
        i = 0
        while not stop.is_set() and time.monotonic() - t0 < seconds:
            status, took = search(gateway, f"depth of reach {(n * 97 + i) % 300}")
            log.append((time.monotonic() - t0, status, took))
            i += 1

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 30)


def seed(tenant: str, n: int = 4) -> httpx.Client:
    gateway = client(tenant)
    for k in range(n):
        reply = upload(gateway, f"seed-{k}.txt", text(f"seed survey {k}", 40, f"zyxseed{k}qv"))
        if reply.status_code != 200:
            raise RuntimeError(f"seeding failed: {reply.status_code} {reply.text[:200]}")
    return gateway

