"""The scaling run against the stand-in cluster: ingestion and search throughput through Envoy with one or two rag
replicas (``make cluster-scale``), bounded in count and time; its figures go into
``bench/results/cluster-<date>.json`` (``tools/cluster/__main__.py``)."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tools.cluster.state import READY, documents
from tools.cluster.traffic import client, percentiles, search, text, upload


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

