"""The tool registry of the agent loop: built-in tools that call the mesh, plus tools of MCP servers.

Definitions use the Anthropic tool-use shape (name, description, JSON-schema input); inputs
are validated against the schema before a tool runs. Built-ins: document analytics computed
here (the NLP service's own statistics code), entities, sentiment, hybrid and dense search,
and knowledge-graph queries, each a real call to the NLP, RAG or graph service.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import jsonschema

from services.orchestrator.operations import Operations
from services.providers.base import ToolSpec
from services.runtime.errors import FieldViolation, InvalidArgument, NotFound
from services.vocabulary import analytics

BUILTIN = "builtin"

ToolFn = Callable[[Mapping[str, Any], str], Awaitable[Any]]
"""Runs a tool: the model's (validated) arguments and the tenant whose agent asked."""


@dataclass(frozen=True)
class ToolDefinition:
    name: str
    description: str
    input_schema: dict[str, Any]
    source: str = BUILTIN
    """builtin, or mcp:<server>."""


@dataclass(frozen=True)
class RegisteredTool:
    definition: ToolDefinition
    run: ToolFn = field(compare=False)


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, RegisteredTool] = {}

    def register(self, definition: ToolDefinition, run: ToolFn) -> None:
        self._tools[definition.name] = RegisteredTool(definition, run)

    def remove_source(self, source: str) -> None:
        for name in [n for n, t in self._tools.items() if t.definition.source == source]:
            del self._tools[name]

    def definitions(self) -> list[ToolDefinition]:
        return [t.definition for t in self._tools.values()]

    def specs(self) -> list[ToolSpec]:
        return [ToolSpec(d.name, d.description, d.input_schema) for d in self.definitions()]

    def get(self, name: str) -> RegisteredTool:
        tool = self._tools.get(name)
        if tool is None:
            raise NotFound(f"no tool named {name!r}", reason="TOOL_NOT_FOUND",
                           metadata={"available": ",".join(sorted(self._tools))})
        return tool

    async def execute(self, name: str, tool_input: Mapping[str, Any], tenant: str) -> Any:
        tool = self.get(name)
        try:
            jsonschema.validate(dict(tool_input), tool.definition.input_schema)
        except jsonschema.ValidationError as exc:
            path = ".".join(str(p) for p in exc.absolute_path) or "input"
            raise InvalidArgument(f"invalid input for tool {name}: {exc.message}", reason="INVALID_TOOL_INPUT",
                                  violations=[FieldViolation(path, exc.message)]) from None
        return await tool.run(tool_input, tenant)


def _text_schema(description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"text": {"type": "string", "minLength": 1, "description": description}},
        "required": ["text"],
    }


def _query_schema(description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "description": description},
            "topK": {"type": "integer", "minimum": 1, "maximum": 50, "description": "results wanted (default 5)"},
        },
        "required": ["query"],
    }


def document_statistics(text: str) -> dict[str, Any]:
    stats = analytics.compute(text, top_keywords=10)
    data = asdict(stats)
    data["top_keywords"] = [{"keyword": k, "count": c} for k, c in stats.top_keywords]
    data["reading_time_minutes"] = math.ceil(stats.words / analytics.READING_WPM) if stats.words else 0
    return data


def register_builtins(registry: ToolRegistry, operations: Operations) -> None:
    async def analyze(args: Mapping[str, Any], tenant: str) -> Any:
        return document_statistics(str(args["text"]))

    async def entities(args: Mapping[str, Any], tenant: str) -> Any:
        return (await operations.run("nlp.entities", {"text": args["text"]}, tenant)).data

    async def sentiment(args: Mapping[str, Any], tenant: str) -> Any:
        return (await operations.run("nlp.sentiment", {"text": args["text"]}, tenant)).data

    async def rag_search(args: Mapping[str, Any], tenant: str) -> Any:
        params = {"query": args["query"], "top_k": args.get("topK", 5)}
        return (await operations.run("rag.search", params, tenant)).data

    async def vector_search(args: Mapping[str, Any], tenant: str) -> Any:
        params = {"query": args["query"], "top_k": args.get("topK", 5), "dense_only": True}
        return (await operations.run("rag.search", params, tenant)).data

    async def graph_query(args: Mapping[str, Any], tenant: str) -> Any:
        params = {"query": args["query"], "params": args.get("params") or {}}
        return (await operations.run("graph.query", params, tenant)).data

    graph_schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1,
                      "description": "read-only Cypher, or a plain question about topics and entities"},
            "params": {"type": "object", "description": "Cypher parameters"},
        },
        "required": ["query"],
    }
    for definition, run in (
        (ToolDefinition("analyze_document_text", "Word, sentence and paragraph counts, reading time, readability"
                        " and top keywords of a text (computed locally).",
                        _text_schema("the text to analyse")), analyze),
        (ToolDefinition("extract_entities", "Named entities (people, organisations, places, dates, ...) in a text.",
                        _text_schema("the text to scan")), entities),
        (ToolDefinition("rag_search", "Hybrid keyword + semantic search over the stored documents; returns"
                        " scored passages with their document and page.",
                        _query_schema("what to search for")), rag_search),
        (ToolDefinition("vector_search", "Semantic (embedding) search over the stored documents.",
                        _query_schema("what to search for")), vector_search),
        (ToolDefinition("knowledge_graph_query", "Query the knowledge graph of documents, topics and entities.",
                        graph_schema), graph_query),
        (ToolDefinition("python_sentiment", "Sentiment of a text, overall and per sentence.",
                        _text_schema("the text to score")), sentiment),
    ):
        registry.register(definition, run)
