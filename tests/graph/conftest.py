"""Graph-store fixtures: the embedded backend, a real ArcadeDB Bolt server, and an opt-in real Neo4j.

``graph_backend`` runs a test once per backend:
- ``ladybug``: embedded LadybugDB in a temporary directory;
- ``arcadedb``: ArcadeDB's Bolt server (started once per session on free 127.0.0.1 ports) through the
  production neo4j-driver store, one database per tenant;
- ``arcadedb-shared``: the same server in shared tenancy (one database, tenant property only);
- ``neo4j``: only when NEO4J_TEST_URI is set (with NEO4J_TEST_USER / NEO4J_TEST_PASSWORD, and
  NEO4J_TEST_TENANCY=database|shared, default database, which needs CREATE DATABASE: Enterprise).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest
from pydantic import SecretStr
from servicer_view import ServicerView

from services.clients.graph import DocumentUpsert
from services.graph.knowledge_graph import KnowledgeGraph
from services.graph.settings import GraphSettings, Neo4jSettings
from services.graph.store import GraphStore
from services.runtime import request_context

BACKENDS = ["ladybug", "arcadedb", "arcadedb-shared"] + (["neo4j"] if os.environ.get("NEO4J_TEST_URI") else [])


@pytest.fixture(scope="session")
def arcadedb(tmp_path_factory):
    from tests.graph.arcadedb_local import LocalArcadeDb

    with LocalArcadeDb(tmp_path_factory.mktemp("arcadedb")) as server:
        yield server


def _neo4j_test_settings() -> Neo4jSettings:
    return Neo4jSettings(
        uri=os.environ["NEO4J_TEST_URI"],
        user=os.environ.get("NEO4J_TEST_USER", "neo4j"),
        password=SecretStr(os.environ.get("NEO4J_TEST_PASSWORD", "")),
        tenancy=os.environ.get("NEO4J_TEST_TENANCY", "database"),
        database=os.environ.get("NEO4J_TEST_DATABASE", "neo4j"),
        provision="cypher",
    )


async def open_test_store(backend: str, request: pytest.FixtureRequest, tmp_path) -> GraphStore:
    if backend == "ladybug":
        from services.graph.ladybug_store import LadybugGraphStore

        return LadybugGraphStore(tmp_path / "ladybug", GraphSettings())
    from services.graph.neo4j_store import Neo4jGraphStore

    if backend == "neo4j":
        return Neo4jGraphStore(_neo4j_test_settings())
    server = request.getfixturevalue("arcadedb")
    return Neo4jGraphStore(server.settings("shared" if backend == "arcadedb-shared" else "database"))


@pytest.fixture
def all_backends() -> list[str]:
    return list(BACKENDS)


@pytest.fixture
def open_backend(request, tmp_path):
    """Opens any backend by name (the caller closes it), for tests that compare backends."""

    async def open_(backend: str) -> GraphStore:
        return await open_test_store(backend, request, tmp_path / backend)

    return open_


@pytest.fixture(params=BACKENDS)
async def store(request, tmp_path) -> AsyncIterator[GraphStore]:
    opened = await open_test_store(request.param, request, tmp_path)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def queries_supported(store) -> bool:
    """Shared-database tenancy refuses QueryGraph by design (see neo4j_store); the others run it."""
    settings = getattr(store, "_settings", None)
    return not isinstance(settings, Neo4jSettings) or settings.tenancy == "database"


@dataclass(frozen=True)
class Tenants:
    a: str
    b: str


@pytest.fixture
def tenants() -> Tenants:
    """Fresh tenant ids per test, so tests sharing a server never see each other's data."""
    run = uuid.uuid4().hex[:8]
    return Tenants(f"acme-{run}", f"Acme_{run}")


@contextlib.contextmanager
def _as_tenant(tenant: str) -> Iterator[None]:
    """Binds the request context the server interceptor would bind for ``x-tenant-id: tenant``."""
    token = request_context.bind(request_context.RequestContext(request_id=uuid.uuid4().hex, tenant=tenant))
    try:
        yield
    finally:
        request_context.unbind(token)


@pytest.fixture
def graph(store) -> ServicerView:
    return ServicerView(KnowledgeGraph(store, GraphSettings(upsert_batch_facts=50, query_timeout_s=5.0)))


@pytest.fixture
def as_tenant():
    return _as_tenant


@pytest.fixture
def ingest(graph):
    """Streams documents into ``graph`` for a tenant the way the servicer does."""

    async def run(tenant: str, *docs: DocumentUpsert):
        with _as_tenant(tenant):
            batcher = graph.upsert_batcher()
            for doc in docs:
                await batcher.start_document(doc.document_id, doc.title, doc.file_type)
                for name, weight in doc.topics:
                    batcher.add_topic(name, weight)
                for name, entity_type, count in doc.entities:
                    batcher.add_entity(name, entity_type, count)
            return await batcher.finish()

    return run
