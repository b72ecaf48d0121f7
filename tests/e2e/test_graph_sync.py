"""Ingestion feeds the knowledge graph through the real mesh (rag -> nlp -> graph), via the outbox.

The graph service is stopped, a document is ingested (READY, graph sync PENDING), the RAG
service is restarted (the pending entry survives), the graph comes back and the document
turns SYNCED; its facts are then visible through the graph's REST routes, related documents
work, and deleting the document removes it from the graph.
"""

from __future__ import annotations

import time
import uuid
from urllib.parse import quote

import httpx
import pytest

from services.rag.graph_sync.settings import DEFAULT_ENTITY_LABELS

pytestmark = pytest.mark.e2e

WAIT_S = 90
HARBOUR = b"""# Offshore turbines at Brest

Ada Lovelace inspected the offshore wind turbines near Brest in March. The blade coatings
had worn thin, so Ada Lovelace asked Siemens Gamesa for new blade coatings before winter.

Siemens Gamesa engineers in Brest agreed to replace the blade coatings on every offshore turbine.
"""
COATINGS = b"""# Blade coatings

Siemens Gamesa supplies the blade coatings for offshore wind turbines. Engineers tested the
new coatings in Brest with Ada Lovelace, who keeps the maintenance log of every turbine.
"""


@pytest.fixture(scope="module")
def client(mesh):
    with mesh.http(timeout=120) as http:
        yield http


@pytest.fixture
def tenant() -> dict[str, str]:
    return {"x-tenant-id": f"graph-sync-e2e-{uuid.uuid4().hex[:8]}"}


def ingest(client: httpx.Client, name: str, data: bytes, headers: dict[str, str]) -> dict:
    reply = client.post("/v1/documents:ingest", params={"filename": name}, content=data,
                        headers={**headers, "content-type": "text/markdown"})
    assert reply.status_code == 200, reply.text
    return reply.json()["result"]["document"]


def document(client: httpx.Client, document_id: str, headers: dict[str, str]) -> dict:
    reply = client.get(f"/v1/documents/{document_id}", headers=headers)
    assert reply.status_code == 200, reply.text
    return reply.json()["document"]


def wait_until(check, what: str, timeout: float = WAIT_S):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout:.0f} s")
        time.sleep(0.5)


def wait_synced(client: httpx.Client, document_id: str, headers: dict[str, str]) -> dict:
    return wait_until(
        lambda: (d := document(client, document_id, headers))["graph_sync"] == "GRAPH_SYNC_STATUS_SYNCED" and d,
        f"graph sync of {document_id}",
    )


def stats(client: httpx.Client, headers: dict[str, str]) -> dict[str, int]:
    reply = client.get("/v1/graph/stats", headers=headers)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    return {k: int(body.get(k, 0)) for k in ("documents", "topics", "entities", "covers_edges", "mentions_edges")}


def nlp_entities(client: httpx.Client, document_id: str, headers: dict[str, str]) -> list[str]:
    """What NLP finds in the document's stored text (joined as the feed sends it)."""
    text = client.get(f"/v1/documents/{document_id}/text", headers=headers).json()
    joined = "\n\n".join(s["text"].strip() for s in text["sections"] if s["text"].strip())
    reply = client.post("/v1/nlp/entities", json={"text": joined, "labels": list(DEFAULT_ENTITY_LABELS)},
                        headers=headers)
    assert reply.status_code == 200, reply.text
    return [e["text"] for e in reply.json()["entities"]]


def graph_sync_count(mesh, outcome: str) -> float:
    """The rag process's count of graph outbox entries processed with ``outcome`` (its Prometheus endpoint)."""
    text = httpx.get(mesh.metrics_urls()["rag"], timeout=10).text
    line = f'docuthinker_graph_sync_total{{operation="upsert",outcome="{outcome}"}} '
    return sum(float(row[len(line):]) for row in text.splitlines() if row.startswith(line))


def test_ingestion_survives_a_graph_outage_and_a_restart_then_syncs(mesh, client, tenant):
    retries_before = graph_sync_count(mesh, "retry")
    mesh.stop_service("graph")
    try:
        started = time.monotonic()
        harbour = ingest(client, "harbour.md", HARBOUR, tenant)
        took = time.monotonic() - started
        assert harbour["status"] == "DOCUMENT_STATUS_READY"
        assert harbour["graph_sync"] == "GRAPH_SYNC_STATUS_PENDING"
        assert took < 30, f"ingestion waited on the graph ({took:.1f} s)"
        # The worker has tried (NLP, then the graph) and failed: its retry counter moved (awaited, not slept on).
        wait_until(lambda: graph_sync_count(mesh, "retry") > retries_before, "a failed graph sync attempt")
        assert document(client, harbour["document_id"], tenant)["graph_sync"] == "GRAPH_SYNC_STATUS_PENDING"
        listed = client.get("/v1/documents", headers=tenant).json()["documents"]
        assert [d["graph_sync"] for d in listed] == ["GRAPH_SYNC_STATUS_PENDING"]

        mesh.stop_service("rag")  # the pending sync lives in the outbox on disk
        mesh.start_service("rag")
        restarted = wait_until(lambda: _get_or_none(client, harbour["document_id"], tenant), "rag back behind Envoy")
        assert restarted["graph_sync"] == "GRAPH_SYNC_STATUS_PENDING"
    finally:
        mesh.start_service("graph")

    wait_synced(client, harbour["document_id"], tenant)
    assert stats(client, tenant)["documents"] == 1

    coatings = ingest(client, "coatings.md", COATINGS, tenant)
    assert coatings["graph_sync"] == "GRAPH_SYNC_STATUS_PENDING"
    wait_synced(client, coatings["document_id"], tenant)

    counts = stats(client, tenant)
    assert counts["documents"] == 2 and counts["topics"] > 0 and counts["covers_edges"] >= counts["topics"]
    assert counts["entities"] > 0 and counts["mentions_edges"] >= counts["entities"]

    found = nlp_entities(client, harbour["document_id"], tenant)
    assert found, "NLP found no entity in the harbour document"
    entity = client.get(f"/v1/graph/entities/{quote(found[0])}", headers=tenant)
    assert entity.status_code == 200, entity.text
    assert harbour["document_id"] in [d["document_id"] for d in entity.json()["documents"]]

    shared = {e.lower() for e in found} & {e.lower() for e in nlp_entities(client, coatings["document_id"], tenant)}
    assert shared, "the two documents were written to share entities"
    related = client.get(f"/v1/graph/documents/{harbour['document_id']}/related", headers=tenant)
    assert related.status_code == 200, related.text
    [other] = related.json()["documents"]
    assert other["document_id"] == coatings["document_id"] and other["score"] > 0
    assert {e.lower() for e in other["shared_entities"]} & shared

    deleted = client.delete(f"/v1/documents/{harbour['document_id']}", headers=tenant)
    assert deleted.status_code == 200, deleted.text
    wait_until(lambda: stats(client, tenant)["documents"] == 1, "graph delete after the document delete")
    gone = client.get(f"/v1/graph/documents/{harbour['document_id']}/related", headers=tenant)
    assert gone.status_code == 404, gone.text
    assert client.get(f"/v1/graph/documents/{coatings['document_id']}/related", headers=tenant).status_code == 200


def _get_or_none(client: httpx.Client, document_id: str, headers: dict[str, str]) -> dict | None:
    try:
        reply = client.get(f"/v1/documents/{document_id}", headers=headers)
    except httpx.TransportError:
        return None
    return reply.json()["document"] if reply.status_code == 200 else None
