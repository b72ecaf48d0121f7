"""The graph client against the shared fake graph service on a real port (the runtime's server and channels)."""

from __future__ import annotations

import pytest

from services.clients.graph import GraphClient
from services.runtime import ChannelPool, MeshSettings, create_server, request_context
from tests.support.fake_services import FakeGraph, binding


@pytest.fixture
async def graph():
    fake = FakeGraph()
    running = await create_server(binding("graph", fake), MeshSettings(), port=0)
    pool = ChannelPool(MeshSettings(graph_port=running.port, downstream_timeout_s=10))
    yield fake, GraphClient(pool)
    await pool.close()
    await running.stop(0)


async def test_related_goes_to_the_tenant_it_names_and_else_to_the_callers(graph):
    fake, client = graph
    token = request_context.bind(request_context.RequestContext("req-1", "acme"))
    try:
        for tenant, document_id in (("acme", "a1"), ("acme", "a2"), ("beta", "b1"), ("beta", "b2")):  # as upserted
            fake.documents[(tenant, document_id)] = {"title": document_id.upper(), "topics": {}, "entities": {}}
        ambient = await client.related("a1", 5)
        named = await client.related("b1", 5, tenant="beta")
    finally:
        request_context.unbind(token)
    assert [d.document_id for d in ambient] == ["a2"]
    assert [(d.document_id, d.title) for d in named] == [("b2", "B2")], "the named tenant wins over the ambient one"
    assert [t for t, method in fake.requests if method == "GetRelatedDocuments"] == ["acme", "beta"]
