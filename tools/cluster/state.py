"""What the drills read of the stand-in cluster's state: Envoy's cluster stats, the shared database's documents
(and the ledger of READY / lost / duplicated ones), the containers, and waits on these."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx

from tools.cluster import mesh, net

READY, FAILED = 6, 7
STATUS_NAMES = ("UNSPECIFIED", "PENDING", "PARSING", "CHUNKING", "EMBEDDING", "INDEXING", "READY", "FAILED")
STATS = f"http://{net.address(mesh.H1)}:9902/stats/prometheus"


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


def container(name: str) -> mesh.Container:
    return next(c for c in mesh.containers() if c.name == name)


