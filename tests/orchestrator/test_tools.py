"""The agent's built-in tools run under the tenant they are given, not whatever request context is bound."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.orchestrator.operations import Outcome
from services.orchestrator.tools import ToolRegistry, register_builtins
from services.runtime import request_context


class RecordingOperations:
    """Answers every operation with an empty result and records (operation, tenant)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    async def run(self, name: str, params: Mapping[str, Any], tenant: str) -> Outcome:
        self.calls.append((name, tenant))
        return Outcome({}, "recorded")


async def test_each_builtin_mesh_tool_passes_the_given_tenant_to_its_operation():
    operations = RecordingOperations()
    registry = ToolRegistry()
    register_builtins(registry, operations)
    inputs = {"extract_entities": {"text": "Ada"}, "python_sentiment": {"text": "good"},
              "rag_search": {"query": "q"}, "vector_search": {"query": "q"}, "knowledge_graph_query": {"query": "q"}}
    # A context of another tenant is bound, as inside an unrelated RPC: the tools must not read it.
    token = request_context.bind(request_context.RequestContext("r1", "someone-else"))
    try:
        for name, tool_input in inputs.items():
            await registry.execute(name, tool_input, "acme")
    finally:
        request_context.unbind(token)
    assert operations.calls == [("nlp.entities", "acme"), ("nlp.sentiment", "acme"), ("rag.search", "acme"),
                                ("rag.search", "acme"), ("graph.query", "acme")]
