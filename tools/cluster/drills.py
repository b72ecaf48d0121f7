"""The failover drills against the stand-in cluster (``make cluster-chaos``), every one bounded in count and time:
a rag container killed mid-ingestion, a host's link cut, packet loss, PostgreSQL restarted, a delayed link.

They drive the cluster with ``traffic`` and read it with ``state``; the counts each drill returns go into
``bench/results/cluster-<date>.json`` (``tools/cluster/__main__.py``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from tools.cluster import mesh, net
from tools.cluster.state import (
    FAILED,
    READY,
    STATUS_NAMES,
    container,
    documents,
    envoy_stat,
    ledger,
    rag_members_healthy,
    wait_for,
)
from tools.cluster.traffic import client, percentiles, search, search_load, seed, text, upload


def kill_rag_mid_ingestion(lease_s: float) -> dict[str, Any]:
    """SIGKILL the rag container holding a large ingestion's lease, with small uploads running beside it."""
    tenant = f"kill{uuid.uuid4().hex[:6]}"
    gateway = client(tenant, timeout=300)
    big = ("folio.txt", text("Orrin canal survey", 1500, "zyxbigqv"))
    small = {f"ledger-{n}.txt": f"Ledger {n} of the Orrin canal company, marker zyx{n}qv, toll {n + 3} pence."
             for n in range(12)}
    pool = ThreadPoolExecutor(max_workers=3)
    in_flight = pool.submit(upload, gateway, *big)
    holder = None
    deadline = time.monotonic() + 120
    while holder is None and time.monotonic() < deadline and not in_flight.done():
        claims = [r[4] for r in documents(tenant) if r[0] == big[0] and r[4]]
        holder = claims[0].split(":")[0] if claims else None
        time.sleep(0.2)
    if holder is None:
        raise RuntimeError("the large upload was never seen claimed (finished too fast, or never started)")
    small_results: dict[str, int] = {}

    def small_upload(name: str) -> None:
        try:
            small_results[name] = upload(gateway, name, small[name], timeout=120).status_code
        except httpx.HTTPError:
            small_results[name] = 0

    smalls = [pool.submit(small_upload, name) for name in small]
    time.sleep(1.0)
    status_at_kill = next(r[2] for r in documents(tenant) if r[0] == big[0])
    victim = container(holder)
    killed_at = time.monotonic()
    mesh.podman(victim.host, "kill", "--signal", "KILL", victim.name, timeout=30)
    for future in smalls:
        future.result(timeout=300)
    try:
        big_status = in_flight.result(timeout=300).status_code
    except httpx.HTTPError:
        big_status = 0
    # The small uploads that failed with the kill: their clients send the same bytes again (same content hash, so
    # the same document id: the retry is safe), up to three times, 2 s apart.
    retried = [name for name, status in small_results.items() if status != 200]
    for name in retried:
        for _ in range(3):
            small_upload(name)
            if small_results[name] == 200:
                break
            time.sleep(2)
    taken_over = wait_for(lambda: any(r[0] == big[0] and r[2] in (READY, FAILED) for r in documents(tenant)),
                          timeout_s=lease_s * 3 + 240, step_s=1)
    recovered_at = time.monotonic()
    counts = ledger(tenant, [big[0], *small])
    mesh.podman(victim.host, "start", victim.name, timeout=60)
    rejoined = mesh.wait_healthy([victim], timeout_s=300)
    return {
        "killed": victim.name, "lease_s": lease_s, "large_document_status_at_kill": status_at_kill,
        "large_document_status_name_at_kill": STATUS_NAMES[status_at_kill],
        "large_upload_client_status": big_status,
        "small_uploads_first_try": dict(Counter(str(s) for s in small_results.values())) if not retried else
        {"ok": len(small) - len(retried), "failed_then_retried": len(retried)},
        "small_uploads_after_retry": dict(Counter(str(small_results[n]) for n in small)),
        "large_document_settled_s_after_kill": None if taken_over is None else round(recovered_at - killed_at, 1),
        **counts,
        "killed_container_restarted_healthy_s": round(rejoined, 1),
    }


def cut_link(host: str, cut_s: float = 30, before_s: float = 10, after_s: float = 40) -> dict[str, Any]:
    """Searches (2 clients) and uploads through Envoy while ``host``'s cable is pulled for ``cut_s`` seconds."""
    tenant = f"cut{uuid.uuid4().hex[:6]}"
    gateway = seed(tenant)
    total = before_s + cut_s + after_s
    log: list[tuple[float, int, float]] = []
    uploads: list[tuple[float, int]] = []
    stop = threading.Event()
    t0 = time.monotonic()

    def uploader() -> None:
        k = 0
        while not stop.is_set() and time.monotonic() - t0 < total:
            started = time.monotonic() - t0
            try:
                status = upload(gateway, f"during-{k}.txt", f"Upload {k} during the drill, marker zyxup{k}qv.",
                                timeout=30).status_code
            except httpx.HTTPError:
                status = 0
            uploads.append((started, status))
            k += 1
            time.sleep(2)

    up_thread = threading.Thread(target=uploader, daemon=True)
    up_thread.start()
    load = threading.Thread(target=search_load, args=(gateway, total, 2, stop, log, t0), daemon=True)
    load.start()
    healthy_before = envoy_stat("membership_healthy", "rag")
    time.sleep(before_s)
    net.set_link(host, up=False)
    cut_at = time.monotonic() - t0
    ejected = wait_for(lambda: (envoy_stat("membership_healthy", "rag") or 0) < (healthy_before or 2), cut_s, 0.5)
    time.sleep(max(0.0, cut_s - (time.monotonic() - t0 - cut_at)))
    net.set_link(host, up=True)
    restored_at = time.monotonic() - t0
    rejoined = rag_members_healthy(int(healthy_before or 2), timeout_s=after_s + 60)
    load.join(timeout=total + 60)
    stop.set()
    up_thread.join(timeout=60)

    def window(a: float, b: float) -> list[tuple[float, int, float]]:
        return [entry for entry in log if a <= entry[0] < b]

    during = window(cut_at, restored_at)
    after = window(restored_at, total + 60)
    failures_after = [e for e in after if e[1] != 200]
    last_failure = max((e[0] for e in log if e[1] != 200), default=None)
    return {
        "host": host, "cut_s": cut_s,
        "searches": {"before": len(window(0, cut_at)), "during_cut": len(during), "after": len(after)},
        "search_failures_during_cut": dict(Counter(str(e[1]) for e in during if e[1] != 200)),
        "search_failures_after_restore": dict(Counter(str(e[1]) for e in failures_after)),
        "search_latency_during_cut": {**percentiles([e[2] for e in during]),
                                      "max_ms": round(max((e[2] for e in during), default=0) * 1000, 1)},
        "search_latency_before": percentiles([e[2] for e in window(0, cut_at)]),
        "last_failed_search_s_after_cut": None if last_failure is None else round(last_failure - cut_at, 1),
        "uploads": {"during_cut": dict(Counter(str(s) for t, s in uploads if cut_at <= t < restored_at)),
                    "outside_cut": dict(Counter(str(s) for t, s in uploads if not cut_at <= t < restored_at))},
        "envoy_marked_rag_unhealthy_s_after_cut": ejected,
        "rag_rejoined_envoy_s_after_restore": rejoined,
    }


def packet_loss(percents: tuple[int, ...] = (0, 1, 5), searches: int = 60) -> dict[str, Any]:
    """Search latency and errors with N % of packets dropped on both rag hosts' links (both directions)."""
    tenant = f"loss{uuid.uuid4().hex[:6]}"
    gateway = seed(tenant)
    figures = {}
    try:
        for percent in percents:
            net.set_loss((mesh.H2, mesh.H3), percent)
            results = [search(gateway, f"depth of reach {i}", timeout=15) for i in range(searches)]
            ok = [took for status, took in results if status == 200]
            figures[f"{percent}%"] = {"searches": searches, "failed": searches - len(ok),
                                      "failures": dict(Counter(str(s) for s, _ in results if s != 200)),
                                      **percentiles(ok)}
    finally:
        net.set_loss((mesh.H2, mesh.H3), 0)
    return figures


def postgres_restart(downtime_s: float = 10) -> dict[str, Any]:
    """PostgreSQL stopped for ``downtime_s`` and started again, with searches running; then every write checked."""
    tenant = f"pg{uuid.uuid4().hex[:6]}"
    gateway = seed(tenant)
    before = [f"seed-{k}.txt" for k in range(4)]
    log: list[tuple[float, int, float]] = []
    stop = threading.Event()
    t0 = time.monotonic()
    load = threading.Thread(target=search_load, args=(gateway, downtime_s + 60, 1, stop, log, t0), daemon=True)
    load.start()
    time.sleep(3)
    pg = container("dt40-postgres")
    stopped_at = time.monotonic() - t0
    mesh.podman(pg.host, "stop", "--time", "10", pg.name, timeout=60)
    down_at = time.monotonic() - t0
    time.sleep(downtime_s)
    mesh.podman(pg.host, "start", pg.name, timeout=60)
    started_at = time.monotonic() - t0
    first_ok = wait_for(lambda: any(e[1] == 200 and e[0] > started_at for e in log), 60, 0.5)
    stop.set()
    load.join(timeout=90)
    after = [f"after-{k}.txt" for k in range(4)]
    statuses = [upload(gateway, name, text(f"after survey {name}", 20, f"zyx{name[:-4]}qv")).status_code
                for name in after]
    return {
        "downtime_s": downtime_s, "stop_took_s": round(down_at - stopped_at, 1),
        "searches_while_down": len([e for e in log if stopped_at <= e[0] < started_at]),
        "search_failures_while_down": dict(Counter(str(e[1]) for e in log if stopped_at <= e[0] < started_at
                                                   and e[1] != 200)),
        "search_failures_after_start": dict(Counter(str(e[1]) for e in log if e[0] >= started_at and e[1] != 200)),
        "first_ok_search_s_after_start": first_ok,
        "uploads_after_restart": dict(Counter(str(s) for s in statuses)),
        **ledger(tenant, before + after),
    }


PROXY_PORT = 50061


def _proxies(delay_ms: float) -> list[Any]:
    """One delaying proxy per rag host, inside that host's namespace, in front of its rag replica."""
    import subprocess
    import sys

    started = []
    for host in (mesh.H2, mesh.H3):
        started.append(subprocess.Popen(
            ["ip", "netns", "exec", host, sys.executable, "-m", "tools.cluster.delay",
             "--listen", f"{net.address(host)}:{PROXY_PORT}", "--to", "127.0.0.1:50051", "--back-ms", str(delay_ms)],
            cwd=str(mesh.REPO), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return started


def _stop(processes: list[Any]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=10)
        except Exception:  # noqa: BLE001 - a proxy that ignores SIGTERM is killed
            process.kill()


def _envoy_targets(rag_target: str) -> None:
    """Envoy's config rendered again with ``rag_target`` and Envoy restarted on it (the others' targets unchanged)."""
    envoy = container("dt40-envoy")
    mesh.render_envoy(env_vars={**mesh.environment(), "DOCUTHINKER_RAG_TARGET": rag_target})
    mesh.podman(envoy.host, "restart", "--time", "5", envoy.name, timeout=60)
    mesh.wait_healthy([envoy], timeout_s=60)


def delay(delay_ms: float = 20, searches: int = 60) -> dict[str, Any]:
    """Search latency through Envoy with the rag hosts' answers ``delay_ms`` late, against the same path at 0 ms.

    No netem here: a TCP proxy on each rag host (``tools/cluster/delay.py``) holds every chunk the replica sends back
    for ``delay_ms`` (one direction, as ``netem delay`` on the rag host's link would), and Envoy is pointed at the
    proxies; the 0 ms run goes through the same proxies, so only the delay differs."""
    tenant = f"delay{uuid.uuid4().hex[:6]}"
    gateway = seed(tenant)
    rag_target = ",".join(f"{net.address(h)}:{PROXY_PORT}" for h in (mesh.H2, mesh.H3))
    figures: dict[str, Any] = {"method": "TCP proxy per rag host delaying the replica's replies (tools/cluster/"
                                         "delay.py); Envoy routed through the proxies for both runs"}
    proxies: list[Any] = []
    try:
        for ms in (0.0, float(delay_ms)):
            _stop(proxies)
            proxies = _proxies(ms)
            if ms == 0.0:
                _envoy_targets(rag_target)
            rag_members_healthy(2, timeout_s=60)
            for i in range(5):  # untimed: connections made, caches warm
                search(gateway, f"warm {i}")
            results = [search(gateway, f"depth of reach {i}", timeout=15) for i in range(searches)]
            ok = [took for status, took in results if status == 200]
            figures[f"{ms:g}ms"] = {"searches": searches, "failed": searches - len(ok), **percentiles(ok)}
    finally:
        _envoy_targets(mesh.environment()["DOCUTHINKER_RAG_TARGET"])
        _stop(proxies)
        rag_members_healthy(2, timeout_s=60)
    return figures
