"""The mesh on the PostgreSQL backend: upload, search, answer and conversations through Envoy, with
all shared state in one PostgreSQL database that the launcher starts (pgserver) when no DSN is set."""

from __future__ import annotations

import json

import psycopg
import pytest

pytestmark = pytest.mark.e2e

A = {"x-tenant-id": "pg-e2e-a"}
B = {"x-tenant-id": "pg-e2e-b"}
HANDBOOK = """Acme Handbook

The Lyon warehouse stores spare turbine blades for the northern wind farms. The Lyon warehouse was opened in 1998 by Claire Dubois.

Every turbine blade is inspected every six months by the maintenance team.
"""


def sse_events(body: str) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in body.splitlines() if line.startswith("data: ")]


@pytest.fixture(scope="module")
def pg_mesh(tmp_path_factory):
    from services.launcher.mesh import Mesh

    root = tmp_path_factory.mktemp("pgmesh")
    extra = {"DOCUTHINKER_STORE_BACKEND": "postgres", "DOCUTHINKER_SHUTDOWN_GRACE_S": "2",
             "DOCUTHINKER_RAG_GRAPH_POLL_INTERVAL_S": "0.5"}
    with Mesh(data_dir=root / "data", log_dir=root / "logs", auto_ports=True, extra_env=extra) as running:
        yield running


@pytest.fixture(scope="module")
def client(pg_mesh):
    with pg_mesh.http(timeout=180) as http:
        yield http


@pytest.fixture(scope="module")
def document_id(client) -> str:
    reply = client.post("/v1/documents", params={"filename": "handbook.txt"}, content=HANDBOOK.encode(),
                        headers={**A, "content-type": "text/plain"})
    assert reply.status_code == 200, reply.text
    done = sse_events(reply.text)[-1]["done"]["document"]
    assert done["status"] == "DOCUMENT_STATUS_READY", done
    return done["document_id"]


def sql(pg_mesh, statement: str, params=()) -> list[tuple]:
    with psycopg.connect(pg_mesh.env["DOCUTHINKER_POSTGRES_DSN"]) as conn:
        return conn.execute(statement, params).fetchall()


def test_upload_search_and_answer_live_in_postgres(pg_mesh, client, document_id):
    results = client.post("/v1/search", json={"query": "turbine blade inspection", "top_k": 3}, headers=A).json()
    assert results["results"] and "six months" in results["results"][0]["text"]
    answer = client.post("/v1/query", json={"question": "When was the Lyon warehouse opened?"}, headers=A).json()
    assert "1998" in answer["answer"]["answer"], answer
    assert answer["answer"]["citations"][0]["document_id"] == document_id

    [(status, chunks)] = sql(pg_mesh, "SELECT status, chunk_count FROM rag_documents WHERE tenant=%s "
                                      "AND document_id=%s", ("pg-e2e-a", document_id))
    assert status == 6 and chunks > 0  # READY
    [(vectors,)] = sql(pg_mesh, "SELECT count(*) FROM rag_vectors WHERE tenant=%s AND document_id=%s",
                       ("pg-e2e-a", document_id))
    assert vectors == chunks
    [(blobs,)] = sql(pg_mesh, "SELECT count(*) FROM rag_blobs WHERE tenant=%s", ("pg-e2e-a",))
    assert blobs == 1
    rag_dir = pg_mesh.data_dir / "rag"
    assert not (rag_dir / "metadata.sqlite3").exists() and not (rag_dir / "chroma").exists()
    assert not (pg_mesh.data_dir / "orchestrator" / "orchestrator.db").exists()


def test_other_tenants_see_nothing(client, document_id):
    assert client.post("/v1/search", json={"query": "turbine blade", "top_k": 3}, headers=B).json().get(
        "results", []) == []
    assert client.get(f"/v1/documents/{document_id}", headers=B).status_code == 404


def test_a_restarted_rag_replica_serves_the_same_state_without_rebuilding(pg_mesh, client, document_id):
    pg_mesh.stop_service("rag")
    pg_mesh.start_service("rag")  # returns once Envoy routes to it again
    reply = client.post("/v1/search", json={"query": "turbine blade inspection", "top_k": 3}, headers=A)
    assert reply.status_code == 200, reply.text
    assert reply.json()["results"][0]["provenance"]["document_id"] == document_id


def test_conversations_and_costs_are_in_postgres_and_survive_an_orchestrator_restart(pg_mesh, client):
    path = "/v1/conversations/me/general/messages"
    reply = client.post(path, json={"role": "user", "content": "Where are the spare blades?"}, headers=A)
    assert reply.status_code == 200, reply.text
    pg_mesh.stop_service("orchestrator")
    pg_mesh.start_service("orchestrator")
    got = client.get(path, headers=A)
    assert got.status_code == 200, got.text
    assert [m["content"] for m in got.json()["messages"]] == ["Where are the spare blades?"]
    assert client.get(path, headers=B).status_code == 404
    # Keyed by the token's subject ("me" in the path is the caller: TokenAuth's tokens name the user "tests").
    assert sql(pg_mesh, "SELECT tenant, user_id FROM conversations") == [("pg-e2e-a", "tests")]
    assert client.get("/v1/costs", params={"period": "today"}, headers=A).status_code == 200


def test_a_database_outage_is_a_503_with_its_reason_and_searches_resume_when_it_is_back(pg_mesh, client, document_id):
    import time

    from services.storage.local_server import LocalPostgres

    query = {"query": "turbine blade inspection", "top_k": 3}
    server = pg_mesh.postgres
    server.stop()
    try:
        reply = client.post("/v1/search", json=query, headers=A)
        assert reply.status_code == 503, reply.text  # UNAVAILABLE: retry later, not an internal error
        body = reply.json()
        assert body["code"] == 14 and "DATABASE_UNAVAILABLE" in json.dumps(body["details"]), body
        assert "PGSQL" not in reply.text and str(server.data_dir) not in reply.text  # no socket path
    finally:
        pg_mesh.postgres = LocalPostgres(server.data_dir)  # the same data, started again
    deadline = time.monotonic() + 90
    while True:
        reply = client.post("/v1/search", json=query, headers=A)
        if reply.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert reply.status_code == 200, reply.text
    assert "six months" in reply.json()["results"][0]["text"]
