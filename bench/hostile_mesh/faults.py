"""Hostile-mesh probes of faults behind the gateway: a paused service, a restarting one, Envoy's memory cgroup.

- ``pause``: calls in flight to a paused (SIGSTOPped) rag: how long until each ends.
- ``health_while_restarting``: ``/v1/health`` against Envoy's own view while rag restarts: a SERVING report
  followed by "no healthy upstream".
- ``envoy_cgroup``: the memory cgroup Envoy runs in, and its limit.
"""

from __future__ import annotations

import os
import pathlib
import signal
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from .common import TENANT, admin_get, status_body


# -- faults ---------------------------------------------------------------------------------
def pause(mesh, delays: tuple[float, ...] = (0, 0.5, 1, 2, 3, 4, 6), pause_s: float = 14.0) -> dict:
    """SIGSTOP rag; searches started at ``delays`` seconds into the pause; how long each took to end."""
    with mesh.http(timeout=60, headers={"x-tenant-id": TENANT}) as http:
        http.post("/v1/search", json={"query": "warm"})  # an open connection from Envoy to rag, as in use

        def search(delay: float) -> tuple[float, int, bool]:
            time.sleep(delay)
            started = time.monotonic()
            reply = http.post("/v1/search", json={"query": "pump seals"})
            return time.monotonic() - started, reply.status_code, status_body(reply)

        pid = mesh.pids()["rag"]
        os.kill(pid, signal.SIGSTOP)
        try:
            paused = time.monotonic()
            with ThreadPoolExecutor(len(delays)) as pool:
                results = list(pool.map(search, delays))
            time.sleep(max(0.0, pause_s - (time.monotonic() - paused)))
        finally:
            os.kill(pid, signal.SIGCONT)
    retries = admin_get(mesh, "/stats", {"filter": r"^cluster\.rag\.upstream_rq_retry$"}).text
    return {"calls": len(results), "seconds": [round(s, 2) for s, _, _ in results],
            "max_s": round(max(s for s, _, _ in results), 2),
            "statuses": dict(Counter(str(code) for _, code, _ in results)),
            "google_rpc_status": sum(ok for _, _, ok in results),
            "keepalive_s": mesh.settings.peer_keepalive_s, "keepalive_timeout_s": mesh.settings.peer_keepalive_timeout_s,
            "envoy_rag_retries": int(retries.split(":")[-1]) if ":" in retries else None}


def health_while_restarting(mesh, served: int = 20, timeout_s: float = 240.0) -> dict:
    """Stops rag and starts it again; meanwhile asks ``/v1/health`` and, whenever it says rag is SERVING, sends a
    search at once: one answered 503 "no healthy upstream" is a SERVING report Envoy did not stand behind. Runs
    until ``served`` searches after a SERVING report were answered (or ``timeout_s``)."""
    counts: Counter = Counter()
    mesh.stop_service("rag", timeout=1)  # SIGTERM: stopped, as a crash or a deploy would
    mesh.start_service("rag", wait=False)
    deadline = time.monotonic() + timeout_s
    with mesh.http(timeout=30, headers={"x-tenant-id": TENANT}) as http:
        while time.monotonic() < deadline and counts["search_after_serving:200"] < served:
            health = http.get("/v1/health")
            if health.status_code != 200:
                counts[f"health:{health.status_code}"] += 1
                continue
            rag = next(s for s in health.json()["services"] if s["name"] == "rag")
            counts[f"health:rag_{rag['status']}"] += 1
            if rag["status"] == "SERVING":
                search = http.post("/v1/search", json={"query": "pump"})
                counts[f"search_after_serving:{search.status_code}"] += 1
                if search.status_code == 503 and "no healthy upstream" in search.text:
                    counts["serving_but_not_routed"] += 1
            elif rag["detail"].startswith("SERVING, but the gateway"):
                counts["reported_not_yet_routed"] += 1
            time.sleep(0.05)
    mesh._wait(lambda: mesh._routed("rag"), "rag")
    counts.setdefault("serving_but_not_routed", 0)
    return dict(counts)


def envoy_cgroup(mesh) -> dict:
    """The memory cgroup Envoy runs in (its own, with its own limit, when the launcher may make cgroups)."""
    pid = mesh.pids()["gateway"]
    line = next((x for x in pathlib.Path(f"/proc/{pid}/cgroup").read_text().splitlines()
                 if "memory" in x.split(":")[1].split(",") or x.startswith("0::")), "")
    path = line.split(":", 2)[2] if line else ""
    ceiling = mesh.memory_ceiling
    return {"cgroup": path, "own_cgroup": path.endswith("-gateway"),
            "limit_mb": ceiling.limit_of("gateway") if ceiling is not None and ceiling.available else None,
            "ceiling_available": bool(ceiling is not None and ceiling.available),
            "reason": ceiling.reason if ceiling is not None else "no ceiling configured"}

