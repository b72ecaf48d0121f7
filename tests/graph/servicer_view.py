"""The graph domain as the graph tests call it."""

from __future__ import annotations

from services.graph.knowledge_graph import KnowledgeGraph
from services.runtime import request_context


class ServicerView:
    """``KnowledgeGraph`` called the way the servicer calls it: the tenant comes from the request
    context ``as_tenant`` binds (the interceptor's part), every other argument as given."""

    _TENANTED = frozenset({"upsert_batcher", "delete_document", "related", "entity", "stats", "query"})

    def __init__(self, graph: KnowledgeGraph) -> None:
        self.domain = graph

    def __getattr__(self, name: str):
        method = getattr(self.domain, name)
        if name not in self._TENANTED:
            return method
        return lambda *args, **kwargs: method(request_context.current_tenant(), *args, **kwargs)
