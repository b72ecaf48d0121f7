"""The graph service through the real Envoy gateway: REST routes, error mapping and tenant scoping."""

from __future__ import annotations

import uuid

import grpc
import pytest

from docuthinker.graph.v1 import graph_service_pb2 as pb
from docuthinker.graph.v1 import graph_service_pb2_grpc as pb_grpc

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def client(mesh):
    with mesh.http(timeout=60) as http:
        yield http


@pytest.fixture
def tenant() -> dict[str, str]:
    return {"x-tenant-id": f"graph-e2e-{uuid.uuid4().hex[:8]}"}


def _facts(document_id: str, title: str, topics=(), entities=()) -> list[pb.UpsertDocumentFactsRequest]:
    header = pb.DocumentNode(document_id=document_id, title=title, file_type="txt")
    messages = [pb.UpsertDocumentFactsRequest(document=header)]
    messages += [pb.UpsertDocumentFactsRequest(topic=pb.TopicFact(name=n, weight=w)) for n, w in topics]
    messages += [pb.UpsertDocumentFactsRequest(entity=pb.EntityFact(name=n, type=t, count=c)) for n, t, c in entities]
    return messages


async def _seed(mesh, tenant: dict[str, str]) -> None:
    """Facts arrive as a client stream over gRPC, as ingestion sends them: at the graph service's own port with the
    mesh credential (an internal RPC, which the public gateway does not route)."""
    async with grpc.aio.insecure_channel(mesh.grpc_target("graph")) as channel:
        reply = await pb_grpc.GraphServiceStub(channel).UpsertDocumentFacts(
            iter(
                _facts("alpha", "Alpha", [("Knowledge Graphs", 0.9), ("Retrieval", 0.4)],
                       [("Ada Lovelace", "PERSON", 2)])
                + _facts("beta", "Beta", [("knowledge graphs", 0.6)], [("Ada Lovelace", "PERSON", 1)])
                + _facts("gamma", "Gamma", [("Cooking", 1.0)])
            ),
            metadata=mesh.grpc_metadata(tenant["x-tenant-id"]),
            timeout=30,
        )
    assert (reply.documents, reply.topics, reply.entities) == (3, 4, 2)


def test_stats_answer_on_an_empty_graph(client, tenant):
    reply = client.get("/v1/graph/stats", headers=tenant)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert int(body.get("documents", 0)) == 0 and body["backend"] == "ladybug"


@pytest.mark.parametrize(
    "cypher",
    ["MATCH (n) DETACH DELETE n", "CREATE (:Topic {name: 'x'})", "LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l",
     "CALL dbms.components()", "MATCH (n) RETURN n; MATCH (n) DELETE n"],
)
def test_hostile_query_is_400_with_a_field_violation(client, tenant, cypher):
    reply = client.post("/v1/graph/query", json={"cypher": cypher}, headers=tenant)
    assert reply.status_code == 400, reply.text
    status = reply.json()
    assert status["code"] == 3
    details = {d["@type"].rsplit("/", 1)[-1]: d for d in status["details"]}
    # The gateway prints proto field names (preserve_proto_field_names), so snake_case throughout.
    assert details["google.rpc.BadRequest"]["field_violations"][0]["field"] == "cypher"
    assert details["google.rpc.ErrorInfo"]["reason"] in {"CYPHER_NOT_READ_ONLY", "CYPHER_MULTIPLE_STATEMENTS"}


async def test_query_related_and_entities_over_rest(mesh, client, tenant):
    await _seed(mesh, tenant)

    stats = client.get("/v1/graph/stats", headers=tenant).json()
    counts = [int(stats[k]) for k in ("documents", "topics", "entities", "covers_edges", "mentions_edges")]
    assert counts == [3, 3, 1, 4, 2]

    query = client.post(
        "/v1/graph/query",
        json={"cypher": "MATCH (d:Document)-[c:COVERS]->(t:Topic {key: $key}) "
                        "RETURN d.id AS id, c.weight AS w ORDER BY id",
              "params": {"key": "knowledge graphs"}},
        headers=tenant,
    )
    assert query.status_code == 200, query.text
    assert query.json()["rows"] == [{"id": "alpha", "w": 0.9}, {"id": "beta", "w": 0.6}]

    related = client.get("/v1/graph/documents/alpha/related", params={"limit": 5}, headers=tenant)
    assert related.status_code == 200, related.text
    (beta,) = related.json()["documents"]
    assert beta["document_id"] == "beta" and beta["shared_topics"] == ["Knowledge Graphs"]
    assert beta["shared_entities"] == ["Ada Lovelace"] and beta["score"] == pytest.approx(0.6 + 0.5)

    entity = client.get("/v1/graph/entities/ada%20lovelace", headers=tenant)
    assert entity.status_code == 200, entity.text
    assert entity.json()["name"] == "Ada Lovelace"
    assert [(d["document_id"], d["count"]) for d in entity.json()["documents"]] == [("alpha", 2), ("beta", 1)]

    other_tenant = {"x-tenant-id": tenant["x-tenant-id"] + "-other"}
    assert client.get("/v1/graph/entities/ada%20lovelace", headers=other_tenant).status_code == 404
    assert client.get("/v1/graph/documents/alpha/related", headers=other_tenant).status_code == 404

    assert client.delete("/v1/graph/documents/gamma", headers=tenant).status_code == 404, "internal: not routed"
    async with grpc.aio.insecure_channel(mesh.grpc_target("graph")) as channel:
        deleted = await pb_grpc.GraphServiceStub(channel).DeleteDocument(
            pb.DeleteDocumentRequest(document_id="gamma"), metadata=mesh.grpc_metadata(tenant["x-tenant-id"]),
            timeout=30)
    assert (deleted.deleted, deleted.orphans_removed) == (True, 1)
    assert client.get("/v1/graph/documents/gamma/related", headers=tenant).status_code == 404
