"""The drills and the scaling run against the stand-in cluster, every one bounded in count and time.

Callers are this machine's clients reaching Envoy at ``10.240.40.1:8080`` over its own veth into the switch; the
counts each drill returns go into ``bench/results/cluster-<date>.json`` (``tools/cluster/__main__.py``).
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from tools.cluster import mesh, net

READY, FAILED = 6, 7
STATUS_NAMES = ("UNSPECIFIED", "PENDING", "PARSING", "CHUNKING", "EMBEDDING", "INDEXING", "READY", "FAILED")
GATEWAY = f"http://{net.address(mesh.H1)}:8080"
STATS = f"http://{net.address(mesh.H1)}:9902/stats/prometheus"


def token(tenant: str) -> str:
    from gateway.auth import AuthSettings, mint

    key = mesh.STATE / "signing" / "signing-key.pem"
    return mint(key, tenant, ttl_s=3 * 3600, auth=AuthSettings(), subject=f"drill-{tenant}")


def client(tenant: str, timeout: float = 30) -> httpx.Client:
    return httpx.Client(base_url=GATEWAY, timeout=timeout, headers={"authorization": f"Bearer {token(tenant)}"})


def database() -> Any:
    import psycopg

    return psycopg.connect(host=net.address(mesh.H1), port=mesh.PG_PORT, user=mesh.PG_USER, dbname="docuthinker",
                           password=mesh.postgres_password(), connect_timeout=5, autocommit=True)


def envoy_stat(name: str, cluster: str) -> float | None:
    """One of Envoy's cluster gauges or counters (``membership_healthy`` ...) from its stats listener."""
    try:
        text = httpx.get(STATS, timeout=3).text
    except httpx.HTTPError:
        return None
    needle = f'envoy_cluster_{name}{{envoy_cluster_name="{cluster}"}}'
    for line in text.splitlines():
        if line.startswith(needle):
            return float(line.rsplit(" ", 1)[1])
    return None


def wait_for(predicate: Callable[[], bool], timeout_s: float, step_s: float = 0.5) -> float | None:
    """Seconds until ``predicate`` holds, or None at ``timeout_s``."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if predicate():
            return round(time.monotonic() - started, 2)
        time.sleep(step_s)
    return None


def rag_members_healthy(n: int, timeout_s: float = 120) -> float | None:
    return wait_for(lambda: envoy_stat("membership_healthy", "rag") == n, timeout_s)


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


def documents(tenant: str) -> list[tuple[str, str, int, int, str | None, int, int]]:
    """(filename, id, status, chunk_count, claimed_by, chunk rows, vector rows) of every document of ``tenant``."""
    with database() as conn:
        return conn.execute(
            "SELECT d.filename, d.document_id, d.status, d.chunk_count, d.claimed_by,"
            " (SELECT count(*) FROM rag_chunks c WHERE c.tenant=d.tenant AND c.document_id=d.document_id),"
            " (SELECT count(*) FROM rag_vectors v WHERE v.tenant=d.tenant AND v.document_id=d.document_id)"
            " FROM rag_documents d WHERE d.tenant=%s", (tenant,)).fetchall()


def ledger(tenant: str, expected: list[str]) -> dict[str, int]:
    """READY / lost / duplicated counts of ``expected`` filenames, from the shared database itself."""
    rows = documents(tenant)
    by_name = Counter(r[0] for r in rows)
    ready = [r for r in rows if r[2] == READY and r[0] in expected]
    return {
        "expected": len(expected),
        "ready": len({r[0] for r in ready}),
        "failed": sum(1 for r in rows if r[2] == FAILED and r[0] in expected),
        "lost": sum(1 for name in expected if not any(r[0] == name and r[2] == READY for r in rows)),
        "duplicated_documents": sum(n - 1 for name, n in by_name.items() if name in expected and n > 1),
        "chunk_rows_not_matching_count": sum(1 for r in ready if not r[3] == r[5] == r[6]),
    }


def _container(name: str) -> mesh.Container:
    return next(c for c in mesh.containers() if c.name == name)


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
    victim = _container(holder)
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


def _load(gateway: httpx.Client, seconds: float, workers: int, stop: threading.Event,
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


def _seed(tenant: str, n: int = 4) -> httpx.Client:
    gateway = client(tenant)
    for k in range(n):
        reply = upload(gateway, f"seed-{k}.txt", text(f"seed survey {k}", 40, f"zyxseed{k}qv"))
        if reply.status_code != 200:
            raise RuntimeError(f"seeding failed: {reply.status_code} {reply.text[:200]}")
    return gateway


def cut_link(host: str, cut_s: float = 30, before_s: float = 10, after_s: float = 40) -> dict[str, Any]:
    """Searches (2 clients) and uploads through Envoy while ``host``'s cable is pulled for ``cut_s`` seconds."""
    tenant = f"cut{uuid.uuid4().hex[:6]}"
    gateway = _seed(tenant)
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
    load = threading.Thread(target=_load, args=(gateway, total, 2, stop, log, t0), daemon=True)
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
    gateway = _seed(tenant)
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
    gateway = _seed(tenant)
    before = [f"seed-{k}.txt" for k in range(4)]
    log: list[tuple[float, int, float]] = []
    stop = threading.Event()
    t0 = time.monotonic()
    load = threading.Thread(target=_load, args=(gateway, downtime_s + 60, 1, stop, log, t0), daemon=True)
    load.start()
    time.sleep(3)
    pg = _container("dt40-postgres")
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


def scaling(replicas: int, documents_n: int = 24, paragraphs: int = 60, queries: int = 160) -> dict[str, Any]:
    """Ingestion chunks/s (4 concurrent uploads) and search p50/p95 (4 clients) through Envoy with ``replicas``.

    Untimed first: two uploads and 20 searches, so every replica has embedded and searched once (a replica just
    started pays its first encode and its BM25 build on the first calls it gets)."""
    tenant = f"scale{replicas}{uuid.uuid4().hex[:4]}"
    gateway = client(tenant, timeout=600)
    for k in range(2):
        upload(gateway, f"warm-{k}.txt", text(f"warm-up {k} {tenant}", 10, f"zyxwarm{k}qv"))
    for i in range(20):
        search(gateway, f"warm-up {i}", timeout=30)
    bodies = {f"scale-{k}.txt": text(f"scaling survey {k} {tenant}", paragraphs, f"zyxscale{k}qv")
              for k in range(documents_n)}
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as pool:
        statuses = list(pool.map(lambda item: upload(gateway, item[0], item[1], timeout=600).status_code, bodies.items()))
    took = time.monotonic() - started
    rows = [r for r in documents(tenant) if r[2] == READY and r[0] in bodies]
    chunks = sum(r[3] for r in rows)
    # Untimed: each replica rebuilds its keyword cache of the tenant once its chunks changed (after a 1 s quiet
    # period); the searches below measure the settled state, not that rebuild.
    time.sleep(3)
    for i in range(8):
        search(gateway, f"settle {i}", timeout=30)
    log: list[tuple[int, float]] = []
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as pool:
        log = list(pool.map(lambda i: search(gateway, f"depth of reach {i} scaling survey", timeout=30),
                            range(queries)))
    search_s = time.monotonic() - started
    ok = [t for s, t in log if s == 200]
    return {
        "replicas": replicas, "uploads": dict(Counter(str(s) for s in statuses)), "documents_ready": len(rows),
        "chunks": chunks, "ingest_s": round(took, 1), "chunks_per_s": round(chunks / took, 1),
        "searches": queries, "searches_failed": queries - len(ok), "searches_per_s": round(len(ok) / search_s, 1),
        **percentiles(ok),
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
    envoy = _container("dt40-envoy")
    mesh.render_envoy(env_vars={**mesh.environment(), "DOCUTHINKER_RAG_TARGET": rag_target})
    mesh.podman(envoy.host, "restart", "--time", "5", envoy.name, timeout=60)
    mesh.wait_healthy([envoy], timeout_s=60)


def delay(delay_ms: float = 20, searches: int = 60) -> dict[str, Any]:
    """Search latency through Envoy with the rag hosts' answers ``delay_ms`` late, against the same path at 0 ms.

    No netem here: a TCP proxy on each rag host (``tools/cluster/delay.py``) holds every chunk the replica sends back
    for ``delay_ms`` (one direction, as ``netem delay`` on the rag host's link would), and Envoy is pointed at the
    proxies; the 0 ms run goes through the same proxies, so only the delay differs."""
    tenant = f"delay{uuid.uuid4().hex[:6]}"
    gateway = _seed(tenant)
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
