"""Wires the graph service into the shared runtime: picks the backend, builds the domain, registers."""

from __future__ import annotations

from docuthinker.graph.v1 import graph_service_pb2, graph_service_pb2_grpc
from services.graph.knowledge_graph import KnowledgeGraph
from services.graph.servicer import GraphServicer
from services.graph.settings import GraphSettings, Neo4jSettings
from services.graph.store import GraphStore
from services.runtime import MeshSettings, ServiceBinding

FULL_NAME = graph_service_pb2.DESCRIPTOR.services_by_name["GraphService"].full_name


def open_store(settings: MeshSettings, graph: GraphSettings, neo4j: Neo4jSettings) -> GraphStore:
    """The configured backend. Neither opens a connection yet: a graph backend that is down makes
    calls fail with UNAVAILABLE, it does not keep the service from starting."""
    if graph.backend == "neo4j":
        from services.graph.neo4j_store import Neo4jGraphStore

        return Neo4jGraphStore(neo4j)
    from services.graph.ladybug_store import LadybugGraphStore

    return LadybugGraphStore(settings.data_dir / "graph" / "ladybug", graph)


def binding(
    settings: MeshSettings, graph: GraphSettings | None = None, store: GraphStore | None = None
) -> ServiceBinding:
    graph = graph or GraphSettings()
    store = store or open_store(settings, graph, Neo4jSettings())
    servicer = GraphServicer(KnowledgeGraph(store, graph))
    return ServiceBinding(
        name="graph",
        full_names=[FULL_NAME],
        register=lambda server: graph_service_pb2_grpc.add_GraphServiceServicer_to_server(servicer, server),
        on_stop=store.close,
    )
