"""The graph service over a real in-process aio server and channel (embedded backend), and its client."""

from __future__ import annotations

import uuid

import grpc
import pytest
from google.protobuf import json_format, struct_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from docuthinker.graph.v1 import graph_service_pb2 as pb
from docuthinker.graph.v1 import graph_service_pb2_grpc as pb_grpc
from services.clients.graph import DocumentUpsert, GraphClient
from services.graph.neo4j_store import Neo4jGraphStore
from services.graph.service import binding
from services.graph.settings import GraphSettings, Neo4jSettings
from services.launcher.probes import free_port
from services.runtime import MeshSettings, create_server, open_channel
from services.runtime.errors import DomainError, Unavailable


@pytest.fixture
async def served(tmp_path):
    settings = MeshSettings(data_dir=tmp_path, downstream_timeout_s=10)
    running = await create_server(binding(settings, GraphSettings(upsert_batch_facts=4)), settings, port=0)
    channel = open_channel(f"127.0.0.1:{running.port}", settings)
    try:
        yield channel
    finally:
        await channel.close()
        await running.stop(0)


def _meta(tenant: str) -> tuple[tuple[str, str], ...]:
    return (("x-tenant-id", tenant),)


def _details(exc: grpc.aio.AioRpcError) -> tuple[str, list[str]]:
    reason, fields = "", []
    for detail in rpc_status.from_call(exc).details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason = info.reason
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            fields = [v.field for v in bad.field_violations]
    return reason, fields


async def test_client_upserts_and_reads_back(served, as_tenant):
    client = GraphClient(served)
    with as_tenant(f"svc-{uuid.uuid4().hex[:6]}"):  # propagated as x-tenant-id by the channel
        summary = await client.upsert_documents([
            DocumentUpsert("a", "Alpha", "pdf", topics=[("Graphs", 0.5), ("AI", 0.9)],
                           entities=[("Apple Inc.", "ORG", 2)]),
            DocumentUpsert("b", "Beta", "txt", topics=[("graphs", 0.7)], entities=[("apple", "ORG", 1)]),
            DocumentUpsert("c", "Gamma", "txt", topics=[("Cooking", 1.0)]),
        ])
        assert (summary.documents, summary.topics, summary.entities, summary.batches) == (3, 4, 2, 2)
        related = await client.related("a", limit=5)
        assert [(r.document_id, r.title, r.shared_topics, r.shared_entities) for r in related] == [
            ("b", "Beta", ("Graphs",), ("Apple Inc.",))
        ]
        assert related[0].score == pytest.approx(0.5 + 0.5)
        apple = await client.entity("APPLE")
        assert (apple.name, apple.type, [(m.document_id, m.count) for m in apple.documents]) == (
            "Apple Inc.", "ORG", [("a", 2), ("b", 1)]
        )
        deleted = await client.delete_document("c")
        assert (deleted.deleted, deleted.orphans_removed) == (True, 1)
        stats = await client.stats()
        counts = (stats.documents, stats.topics, stats.entities, stats.covers_edges, stats.mentions_edges)
        assert counts == (2, 2, 1, 3, 2)
        with pytest.raises(DomainError) as missing:
            await client.related("c")
        assert (missing.value.code, missing.value.reason) == (grpc.StatusCode.NOT_FOUND, "DOCUMENT_NOT_FOUND")


async def test_stats_answer_on_an_empty_graph(served):
    stub = pb_grpc.GraphServiceStub(served)
    reply = await stub.GetGraphStats(pb.GetGraphStatsRequest(), metadata=_meta("empty-tenant"))
    assert (reply.documents, reply.topics, reply.entities, reply.backend) == (0, 0, 0, "ladybug")


@pytest.mark.parametrize(
    "cypher",
    ["CREATE (n:Topic)", "MATCH (n) DETACH DELETE n", "MATCH (d) SET d.x = 1", "MERGE (n:X)",
     "LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l", "CALL dbms.components()", "RETURN 1; RETURN 2"],
)
async def test_hostile_cypher_is_invalid_argument_with_a_field_violation(served, cypher):
    stub = pb_grpc.GraphServiceStub(served)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.QueryGraph(pb.QueryGraphRequest(cypher=cypher), metadata=_meta("hostile"))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    reason, fields = _details(refused.value)
    assert reason in {"CYPHER_NOT_READ_ONLY", "CYPHER_MULTIPLE_STATEMENTS"}
    assert fields == ["cypher"]


async def test_query_takes_struct_params_and_returns_struct_rows(served):
    stub = pb_grpc.GraphServiceStub(served)
    tenant = _meta(f"q-{uuid.uuid4().hex[:6]}")
    requests = [
        pb.UpsertDocumentFactsRequest(document=pb.DocumentNode(document_id=f"d{i}", title=f"T{i}")) for i in range(3)
    ]
    await stub.UpsertDocumentFacts(iter(requests), metadata=tenant)
    params = json_format.ParseDict({"prefix": "d", "n": 2}, struct_pb2.Struct())
    reply = await stub.QueryGraph(
        pb.QueryGraphRequest(
            cypher="MATCH (d:Document) WHERE d.id STARTS WITH $prefix "
            "RETURN d.id AS id, d.title AS title ORDER BY id LIMIT $n",
            params=params,
        ),
        metadata=tenant,
    )
    assert list(reply.columns) == ["id", "title"]
    rows = [json_format.MessageToDict(r) for r in reply.rows]
    assert rows == [{"id": "d0", "title": "T0"}, {"id": "d1", "title": "T1"}]
    capped = await stub.QueryGraph(
        pb.QueryGraphRequest(cypher="MATCH (d:Document) RETURN d.id AS id", limit=1), metadata=tenant
    )
    assert (len(capped.rows), capped.truncated) == (1, True)
    with pytest.raises(grpc.aio.AioRpcError) as reserved:
        await stub.QueryGraph(
            pb.QueryGraphRequest(cypher="MATCH (d:Document) RETURN d.id AS id",
                                 params=json_format.ParseDict({"tenant": "other"}, struct_pb2.Struct())),
            metadata=tenant,
        )
    assert _details(reserved.value) == ("INVALID_PARAMS", ["params.tenant"])


async def test_tenant_header_isolates_graphs(served):
    stub = pb_grpc.GraphServiceStub(served)
    run = uuid.uuid4().hex[:6]
    doc = pb.UpsertDocumentFactsRequest(document=pb.DocumentNode(document_id="shared-id", title="A's"))
    topic = pb.UpsertDocumentFactsRequest(topic=pb.TopicFact(name="Secret", weight=1))
    await stub.UpsertDocumentFacts(iter([doc, topic]), metadata=_meta(f"a-{run}"))
    other = _meta(f"b-{run}")
    seen = await stub.QueryGraph(pb.QueryGraphRequest(cypher="MATCH (n) RETURN count(n) AS n"), metadata=other)
    assert json_format.MessageToDict(seen.rows[0]) == {"n": 0}
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await stub.GetRelatedDocuments(pb.GetRelatedDocumentsRequest(document_id="shared-id"), metadata=other)
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    mine = await stub.GetGraphStats(pb.GetGraphStatsRequest(), metadata=_meta(f"a-{run}"))
    assert (mine.documents, mine.topics) == (1, 1)


async def test_a_fact_before_any_document_fails_the_stream(served):
    stub = pb_grpc.GraphServiceStub(served)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.UpsertDocumentFacts(
            iter([pb.UpsertDocumentFactsRequest(topic=pb.TopicFact(name="x", weight=1))]), metadata=_meta("orphan")
        )
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert _details(refused.value)[0] == "FACT_WITHOUT_DOCUMENT"


async def test_client_raises_unavailable_when_the_service_is_down():
    settings = MeshSettings(downstream_timeout_s=5)
    channel = open_channel(f"127.0.0.1:{free_port()}", settings)
    try:
        client = GraphClient(channel)
        with pytest.raises(Unavailable):
            await client.upsert_document("d1", "t", topics=[("x", 1.0)])
        with pytest.raises(Unavailable):
            await client.related("d1")
    finally:
        await channel.close()


async def test_backend_outage_is_unavailable_not_internal(tmp_path):
    """The service stays up when its Bolt backend is down, and says UNAVAILABLE so callers replay later."""
    settings = MeshSettings(data_dir=tmp_path, downstream_timeout_s=10)
    dead = Neo4jSettings(uri=f"bolt://127.0.0.1:{free_port()}", password="x", connect_timeout_s=0.5)
    store = Neo4jGraphStore(dead)
    running = await create_server(binding(settings, GraphSettings(backend="neo4j"), store=store), settings, port=0)
    channel = open_channel(f"127.0.0.1:{running.port}", settings)
    try:
        client = GraphClient(channel)
        with pytest.raises(Unavailable) as down:
            await client.upsert_document("d1", "t", topics=[("x", 1.0)])
        assert down.value.reason == "GRAPH_BACKEND_UNAVAILABLE"
        with pytest.raises(Unavailable):
            await client.stats()
    finally:
        await channel.close()
        await running.stop(0)
