"""Hostile-mesh probes of two rag and two orchestrator processes on one PostgreSQL.

- ``takeover``: SIGKILL the rag replica holding an ingestion; the other takes it over once the lease runs out and
  finishes it, once.
- ``dead_letter``: a dead letter is retried by exactly one of the two orchestrators.

``replicated_env`` is the environment such a mesh runs with (the lease and the dead-letter backoff named here).
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from .common import TENANT

LEASE_S = 8.0
DLQ_BACKOFF_S = 15.0


def replicated_env(dsn: str) -> dict[str, str]:
    return {"DOCUTHINKER_STORE_BACKEND": "postgres", "DOCUTHINKER_POSTGRES_DSN": dsn,
            "DOCUTHINKER_SHUTDOWN_GRACE_S": "2", "DOCUTHINKER_RAG_INGEST_LEASE_S": str(LEASE_S),
            "DOCUTHINKER_DLQ_BACKOFF_S": str(DLQ_BACKOFF_S), "DOCUTHINKER_DLQ_POLL_S": "0.5"}


def big_text(paragraphs: int, marker: str) -> str:
    return "\n\n".join(f"Folio {n} of the Orrin canal survey. The surveyor measured the depth of reach {n} at "
                       f"{n % 9 + 1} feet and noted {n % 5} barges moored at the wharf of mile {n}."
                       for n in range(paragraphs)) + f"\n\nMarker word {marker}."


TERMINAL = (6, 7)
"""READY and FAILED, as ``rag_documents.status`` stores them (``DocumentStatus``)."""
PARSING = 2


def _holder(dsn: str, tenant: str, filename: str) -> tuple[str | None, str | None, int]:
    """(document id, claimed_by, status) of the document named ``filename`` in the shared database."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT document_id, claimed_by, status FROM rag_documents WHERE tenant=%s AND filename=%s",
                           (tenant, filename)).fetchone()
    return (row[0], row[1], int(row[2])) if row else (None, None, -1)


def _stored(dsn: str, tenant: str, document_id: str) -> dict:
    import psycopg

    with psycopg.connect(dsn) as conn:
        documents = conn.execute("SELECT count(*) FROM rag_documents WHERE tenant=%s AND document_id=%s",
                                 (tenant, document_id)).fetchone()[0]
        chunks = conn.execute("SELECT count(*) FROM rag_chunks WHERE tenant=%s AND document_id=%s",
                              (tenant, document_id)).fetchone()[0]
        distinct = conn.execute("SELECT count(DISTINCT chunk_id) FROM rag_chunks WHERE tenant=%s AND document_id=%s",
                                (tenant, document_id)).fetchone()[0]
        vectors = conn.execute("SELECT count(*) FROM rag_vectors WHERE tenant=%s AND document_id=%s",
                               (tenant, document_id)).fetchone()[0]
    return {"document_rows": documents, "chunks": chunks, "distinct_chunks": distinct, "vectors": vectors}


def _logged(mesh, service: str, needle: str, *more: str) -> dict[str, int]:
    """Log lines of each replica of ``service`` holding every needle."""
    out = {}
    for name in mesh.replicas_of(service):
        path = mesh.log_dir / f"{name}.log"
        if path.exists():
            out[name] = sum(1 for line in path.read_text(errors="replace").splitlines()
                            if needle in line and all(m in line for m in more))
    return out


def takeover(mesh, dsn: str, lease_s: float, paragraphs: int = 2500) -> dict:
    """Uploads a large document through the gateway, SIGKILLs the rag replica whose lease it is under while it
    ingests, and follows the other replica's takeover: when it claimed it, when it was READY, and what is stored."""
    name = "takeover-folio.txt"
    text = big_text(paragraphs, "zyxtakeoverqv")
    token = mesh.mint(TENANT)
    client = httpx.Client(base_url=mesh.base_url, timeout=600, headers={"authorization": f"Bearer {token}"})

    def upload() -> int:
        try:
            return client.post("/v1/documents:ingest", params={"filename": name}, content=text.encode(),
                               headers={"content-type": "text/plain"}).status_code
        except httpx.HTTPError:
            return 0  # cut: the replica it went to died

    pool = ThreadPoolExecutor(1)
    sent = pool.submit(upload)
    pids = {pid: child for child, pid in mesh.pids().items() if child.startswith("rag")}
    deadline = time.monotonic() + 300
    while True:
        document_id, holder, status = _holder(dsn, TENANT, name)
        # Parsing: its bytes are stored. An upload claims the document, then stores the bytes, then parses; a replica
        # killed between the first two leaves nothing to resume (the survivor fails the document, "upload it
        # again", and the client's upload was cut): a loaded machine once made the kill land there.
        if holder and status >= PARSING and status not in TERMINAL:
            break
        assert time.monotonic() < deadline and not sent.done(), "the upload was never seen in progress"
        time.sleep(0.1)
    victim = pids[int(holder.split(":")[1])]
    killed_at = time.monotonic()
    os.kill(mesh.pids()[victim], signal.SIGKILL)
    survivor = next(child for child in pids.values() if child != victim)
    survivor_pid = mesh.pids()[survivor]
    claimed_at = ready_at = None
    while time.monotonic() - killed_at < 600:
        _, holder, status = _holder(dsn, TENANT, name)
        if claimed_at is None and holder and holder.split(":")[1] == str(survivor_pid):
            claimed_at = time.monotonic()
        reply = client.get(f"/v1/documents/{document_id}")
        if reply.status_code == 200 and reply.json()["document"]["status"] in ("DOCUMENT_STATUS_READY",
                                                                                 "DOCUMENT_STATUS_FAILED"):
            ready_at = time.monotonic()
            final = reply.json()["document"]
            break
        time.sleep(0.25)
    client_status = sent.result()
    pool.shutdown()
    client.close()
    mesh.reap(victim)
    stored = _stored(dsn, TENANT, document_id)
    return {
        "lease_s": lease_s, "killed": victim, "survivor": survivor,
        "first_upload_status": client_status,
        "claimed_by_survivor_s": round(claimed_at - killed_at, 2) if claimed_at else None,
        "ready_s": round(ready_at - killed_at, 2) if ready_at else None,
        "final_status": final["status"] if ready_at else None,
        "chunk_count": int(final["chunk_count"]) if ready_at else None,
        **stored,
        "resumed_by": _logged(mesh, "rag", "resuming interrupted ingestion", document_id),
        "ingested_by": _logged(mesh, "rag", "document ingested", document_id),
        "documents_named": len([d for d in _documents(mesh) if d["filename"] == name]),
    }


def _documents(mesh) -> list[dict]:
    with mesh.http(timeout=60, headers={"x-tenant-id": TENANT}) as http:
        return http.get("/v1/documents", params={"page_size": 100}).json()["documents"]


def _handled(mesh, service: str, method: str) -> int:
    """Calls of ``method`` every replica of ``service`` has handled (their RPC metrics)."""
    total = 0
    for child in mesh.replicas_of(service):
        port = mesh.children[child].metrics_port
        text = httpx.get(f"http://{mesh.settings.local_host}:{port}/metrics", timeout=10).text
        for line in text.splitlines():
            if line.startswith("docuthinker_rpc_server_handled_total") and re.search(f'method="[^"]*/{method}"', line):
                total += int(float(line.rsplit(" ", 1)[1]))
    return total


def dead_letter(mesh, backoff_s: float) -> dict:
    """nlp down: a key-ideas task fails and is dead-lettered; nlp back (new processes, their call counters at
    zero): the letter is due after ``backoff_s`` and both orchestrators' retry loops race for it. Who ran it, and
    how often nlp was asked."""
    for replica in mesh.replicas_of("nlp"):
        mesh.stop_service(replica, timeout=5)
    with mesh.http(timeout=120, headers={"x-tenant-id": TENANT}) as http:
        reply = http.post("/v1/supervisor/process", json={
            "intent": "document.keyIdeas",
            "text": "Ada Lovelace wrote the first published computer program in 1843. She worked with Charles "
                    "Babbage on the Analytical Engine."})
    events = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: ")]
    letter_id = next((e["subtask"]["data"]["dead_letter_id"] for e in events
                      if "subtask" in e and "dead_letter_id" in e["subtask"].get("data", {})), None)
    assert letter_id, events
    enqueued_at = time.monotonic()
    for replica in mesh.replicas_of("nlp"):
        mesh.start_service(replica)  # fresh processes: every ExtractKeyIdeas they count is the retry's
    state = {}
    with mesh.http(timeout=60, role="admin", headers={"x-tenant-id": TENANT}) as http:
        while time.monotonic() - enqueued_at < backoff_s * 6 + 60:
            letters = http.get("/v1/dlq").json().get("messages", [])
            state = next((m for m in letters if m["id"] == letter_id), {})
            if state.get("state") == "replayed" or state.get("state") == "parked":
                break
            time.sleep(0.5)
    time.sleep(3 * 0.5 + 1)  # a few more retry passes of both loops: a second run would show now
    return {
        "letter": letter_id, "state": state.get("state"), "retry_count": int(state.get("retry_count", 0)),
        "replayed_by": _logged(mesh, "orchestrator", "dead letter replayed", letter_id),
        "nlp_calls_for_the_retry": _handled(mesh, "nlp", "ExtractKeyIdeas"),
        "retried_after_s": round(time.monotonic() - enqueued_at, 1), "backoff_s": backoff_s,
    }


