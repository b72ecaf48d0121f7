"""DocuThinker as an MCP server over stdio (official ``mcp`` SDK, FastMCP): ``make mcp``.

Twenty-six tools, each a call to the running mesh (addresses from the usual ``DOCUTHINKER_*``
variables): the seed orchestrator's thirteen (document operations, chat, health, costs, RAG
and graph queries), its AI/ML server's seven (brief, semantic search, topics, vector and
graph upsert/search/query), ``voice_question`` (a spoken question, via ``chat.voice``), and the five
evaluation tools of ``mcp/evals.py`` (upload a set of questions, run it, follow it, compare two runs).
For an MCP host, e.g. Claude Desktop's ``mcpServers``::

    {"docuthinker": {"command": "/path/to/.venv/bin/python",
                     "args": ["-m", "services.orchestrator.mcp.server"],
                     "cwd": "/path/to/docuthinker"}}

stdout carries the protocol; logs go to stderr.
"""

from __future__ import annotations

import base64
import binascii
import logging
import functools
import pathlib
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from mcp.server.fastmcp import FastMCP

from mcp.server.fastmcp.exceptions import ToolError

from services.orchestrator.mcp import evals
from services.orchestrator.mcp.mesh import MeshGateway
from services.orchestrator.settings import OrchestratorSettings
from services.orchestrator.tools import document_statistics
from services.runtime import mesh_auth
from services.runtime.config import MeshSettings
from services.runtime.errors import DomainError, InvalidArgument

ORCHESTRATOR_TOOLS = (
    "document_summarize", "document_key_ideas", "document_sentiment", "document_discussion_points",
    "document_analytics", "document_bullet_summary", "document_rewrite", "document_recommendations",
    "document_chat", "system_health", "system_costs", "rag_query", "knowledge_graph_query",
)
AI_ML_TOOLS = (
    "agentic_document_brief", "semantic_document_search", "quick_topics", "vector_upsert", "vector_search",
    "graph_upsert", "graph_query",
)
VOICE_TOOLS = ("voice_question",)


def build_server(mesh: MeshGateway) -> FastMCP:
    server = FastMCP("docuthinker", instructions="Document intelligence over the DocuThinker mesh.")

    def tool() -> Callable[[Callable[..., Awaitable[Any]]], Any]:
        return lambda fn: server.tool()(_reported(fn))

    # -- the seed orchestrator's thirteen ---------------------------------------------------
    @tool()
    async def document_summarize(text: str) -> dict[str, Any]:
        """Summarise a document in prose."""
        return await mesh.summarize(text)

    @tool()
    async def document_key_ideas(text: str) -> dict[str, Any]:
        """The three to seven key ideas of a document."""
        return await mesh.nlp("key_ideas", text)

    @tool()
    async def document_sentiment(text: str) -> dict[str, Any]:
        """Sentiment of a document, overall and per sentence."""
        return await mesh.nlp("sentiment", text)

    @tool()
    async def document_discussion_points(text: str) -> dict[str, Any]:
        """Questions worth discussing about a document."""
        return await mesh.nlp("discussion_points", text)

    @tool()
    async def document_analytics(text: str) -> dict[str, Any]:
        """Counts, reading time, readability and keywords of a text (the NLP service's analytics)."""
        try:
            return await mesh.nlp("analytics", text)
        except DomainError as exc:
            # The seed computed analytics locally: do the same when the NLP service is down.
            if exc.code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise
            return {**document_statistics(text), "computed": "locally (NLP service unreachable)"}

    @tool()
    async def document_bullet_summary(text: str) -> dict[str, Any]:
        """Bullet-point summary of a document."""
        return await mesh.summarize(text, bullets=True)

    @tool()
    async def document_rewrite(text: str, style: str) -> dict[str, Any]:
        """Rewrite a text in a style, e.g. "formal" or "plain English for a ten-year-old"."""
        return await mesh.nlp("rewrite", text, style=style)

    @tool()
    async def document_recommendations(text: str) -> dict[str, Any]:
        """Actionable recommendations with rationale and priority."""
        return await mesh.nlp("recommendations", text)

    @tool()
    async def document_chat(message: str, documentText: str = "") -> dict[str, Any]:  # noqa: N803 - seed name
        """Ask a question about a document's text (or chat without one)."""
        return await mesh.chat(message, documentText)

    @tool()
    async def system_health() -> dict[str, Any]:
        """Health of the orchestrator and every service of the mesh."""
        return await mesh.health()

    @tool()
    async def system_costs(period: str = "today") -> dict[str, Any]:
        """LLM spend by provider and intent for today, week or month, with the budgets."""
        return await mesh.costs(period)

    @tool()
    async def rag_query(query: str, topK: int = 5) -> dict[str, Any]:  # noqa: N803 - seed name
        """A grounded answer with citations from the stored documents."""
        return await mesh.query(query, topK)

    @tool()
    async def voice_question(  # noqa: N803 - camelCase like the seed's tools
        audioPath: str = "", audioBase64: str = "", documentIds: list[str] | None = None, topK: int = 0,
    ) -> dict[str, Any]:
        """Answer a spoken question (a recording: WAV, MP3, M4A, OGG/Opus, FLAC, WebM, MP4) from the stored
        documents: give a local file path or base64 bytes. Returns the transcript and a cited answer."""
        return await mesh.voice(_recording(audioPath, audioBase64), documentIds or [], topK)

    @tool()
    async def knowledge_graph_query(query: str) -> dict[str, Any]:
        """Query the knowledge graph: read-only Cypher, or a plain question about topics and entities."""
        return (await mesh.tool("knowledge_graph_query", {"query": query}))["result"]

    # -- the seed AI/ML server's seven ------------------------------------------------------
    @tool()
    async def agentic_document_brief(document: str, question: str = "", translate_lang: str = "") -> dict[str, Any]:
        """Full analysis of a document: overview, topics, an answer with citations, the crew's review,
        sentiment, and a translation when a language is given."""
        return await mesh.brief(document, question, translate_lang)

    @tool()
    async def semantic_document_search(document: str, query: str) -> dict[str, Any]:
        """Search inside one document (stored first; identical text is stored once)."""
        return await mesh.search_in(document, query)

    @tool()
    async def quick_topics(document: str) -> dict[str, Any]:
        """Weighted topics of a document."""
        return await mesh.nlp("topics", document)

    @tool()
    async def vector_upsert(document: str, doc_id: str = "", metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        """Store a document: parsed, chunked, embedded and indexed for search."""
        filename = str((metadata or {}).get("filename") or (f"{doc_id}.txt" if doc_id else "mcp-document.txt"))
        return await mesh.ingest(document, filename)

    @tool()
    async def vector_search(query: str, n_results: int = 5) -> dict[str, Any]:
        """Semantic (embedding) search over the stored documents."""
        return await mesh.search(query, n_results, dense_only=True)

    @tool()
    async def graph_upsert(document: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        """Add a document's topics and entities to the knowledge graph."""
        return await mesh.graph_upsert(document, metadata or {})

    @tool()
    async def graph_query(query: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Read-only Cypher over the knowledge graph, with parameters."""
        return await mesh.graph_query(query, params)

    evals.register(lambda fn: server.tool()(_reported(fn)), mesh)
    return server


def _reported(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """A tool whose domain errors reach the MCP host with their gRPC code and reason."""

    @functools.wraps(fn)
    async def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except DomainError as exc:
            raise ToolError(f"{exc.code.name} ({exc.reason}): {exc}") from exc

    return run


def _recording(path: str, encoded: str) -> bytes:
    if bool(path) == bool(encoded):
        raise InvalidArgument("give exactly one of audioPath (a local file) or audioBase64 (the recording's bytes)")
    if path:
        try:
            return pathlib.Path(path).expanduser().read_bytes()
        except OSError as exc:
            raise InvalidArgument(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return base64.b64decode(encoded, validate=True)
    except binascii.Error as exc:
        raise InvalidArgument(f"audioBase64 is not valid base64: {exc}") from exc


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    # It calls the service ports, which serve only the mesh: it carries the credential `make run` made.
    settings = mesh_auth.beside_local_mesh(MeshSettings())
    build_server(MeshGateway(settings, OrchestratorSettings().mcp_tenant)).run("stdio")


if __name__ == "__main__":
    main()
