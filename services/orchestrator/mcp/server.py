"""DocuThinker as an MCP server over stdio (official ``mcp`` SDK, FastMCP): ``make mcp``.

Twenty-seven tools, each a call to the running mesh (addresses from the usual ``DOCUTHINKER_*``
variables): the seed orchestrator's thirteen (document operations, chat, health, costs, RAG
and graph queries), its AI/ML server's seven (brief, semantic search, topics, vector and
graph upsert/search/query), ``voice_question`` (a spoken question, via ``chat.voice``),
``list_documents`` (the library) and the five evaluation tools of ``mcp/evals.py`` (upload a set of
questions, run it, follow it, compare two runs). The document tools take a stored document (``documentId``:
its id, the first characters of its id, or its file name) or inline text; every parameter is described.
For an MCP host, e.g. Claude Desktop's ``mcpServers``::

    {"docuthinker": {"command": "/path/to/.venv/bin/python",
                     "args": ["-m", "services.orchestrator.mcp.server"],
                     "cwd": "/path/to/docuthinker"}}

stdout carries the protocol; logs go to stderr.
"""

from __future__ import annotations

import base64
import binascii
import functools
import logging
import pathlib
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import grpc
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from pydantic import Field

from services.orchestrator.mcp import documents, evals
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
LIBRARY_TOOLS = ("list_documents",)
Text = Annotated[str, Field(description="The document's text (or use documentId for a stored document)")]
DocumentRef = Annotated[str, Field(description="A stored document: its id, the first characters of its id, or its"
                                               " file name (see list_documents); or use text")]


def build_server(mesh: MeshGateway) -> FastMCP:  # noqa: C901 - one tool after another, each its own small closure
    server = FastMCP("docuthinker", instructions="Document intelligence over the DocuThinker mesh.")

    def tool() -> Callable[[Callable[..., Awaitable[Any]]], Any]:
        return lambda fn: server.tool()(_reported(fn))

    # -- the library -------------------------------------------------------------------------
    @tool()
    async def list_documents(
        query: Annotated[str, Field(description="Only documents whose file name or title contains this (any case);"
                                                " empty: all")] = "",
        limit: Annotated[int, Field(description="At most this many, newest first", ge=1, le=500)] = 50,
    ) -> dict[str, Any]:
        """The documents stored in the library (id, file name, title, type, status, pages, chunks), newest first.
        Pass a document's id, the first characters of its id, or its file name as documentId to the
        document_* tools."""
        low = query.casefold().strip()
        found = [documents.summary(d) for d in await mesh.documents()
                 if not low or low in f"{d.get('filename', '')} {d.get('title', '')}".casefold()]
        return {"documents": found[:limit], "count": len(found)}

    # -- the seed orchestrator's thirteen ---------------------------------------------------
    @tool()
    async def document_summarize(text: Text = "", documentId: DocumentRef = "") -> dict[str, Any]:
        """Summarise a document in prose: a stored one (documentId) or the text given."""
        return await mesh.summarize(text, document=documentId)

    @tool()
    async def document_key_ideas(text: Text = "", documentId: DocumentRef = "") -> dict[str, Any]:
        """The three to seven key ideas of a document (stored, or the text given)."""
        return await mesh.nlp("key_ideas", text, documentId)

    @tool()
    async def document_sentiment(text: Text = "", documentId: DocumentRef = "") -> dict[str, Any]:
        """Sentiment of a document (stored, or the text given), overall and per sentence."""
        return await mesh.nlp("sentiment", text, documentId)

    @tool()
    async def document_discussion_points(text: Text = "", documentId: DocumentRef = "") -> dict[str, Any]:
        """Questions worth discussing about a document (stored, or the text given)."""
        return await mesh.nlp("discussion_points", text, documentId)

    @tool()
    async def document_analytics(text: Text = "", documentId: DocumentRef = "") -> dict[str, Any]:
        """Counts, reading time, readability and keywords of a document (stored, or the text given)."""
        try:
            return await mesh.nlp("analytics", text, documentId)
        except DomainError as exc:
            # The seed computed analytics locally: do the same when the NLP service is down.
            if exc.code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) or not text:
                raise
            return {**document_statistics(text), "computed": "locally (NLP service unreachable)"}

    @tool()
    async def document_bullet_summary(text: Text = "", documentId: DocumentRef = "") -> dict[str, Any]:
        """Bullet-point summary of a document (stored, or the text given)."""
        return await mesh.summarize(text, bullets=True, document=documentId)

    @tool()
    async def document_rewrite(
        style: Annotated[str, Field(description='How to rewrite, e.g. "formal" or "plain English for a ten-year-old"')],
        text: Text = "", documentId: DocumentRef = "",
    ) -> dict[str, Any]:
        """Rewrite a text (or a stored document) in a style."""
        return await mesh.nlp("rewrite", text, documentId, style=style)

    @tool()
    async def document_recommendations(text: Text = "", documentId: DocumentRef = "") -> dict[str, Any]:
        """Actionable recommendations with rationale and priority, from a document (stored, or the text given)."""
        return await mesh.nlp("recommendations", text, documentId)

    @tool()
    async def document_chat(
        message: Annotated[str, Field(description="Your question or message")],
        documentText: Annotated[str, Field(description="A document's text to talk about (or use documentId)")] = "",
        documentId: DocumentRef = "",
    ) -> dict[str, Any]:
        """Ask a question about a document (a stored one, or its text), or chat without one."""
        return await mesh.chat(message, documentText, documentId)

    @tool()
    async def system_health() -> dict[str, Any]:
        """Health of the orchestrator and every service of the mesh."""
        return await mesh.health()

    @tool()
    async def system_costs(
        period: Annotated[str, Field(description="today, week or month")] = "today",
    ) -> dict[str, Any]:
        """LLM spend by provider and intent for today, week or month, with the budgets."""
        return await mesh.costs(period)

    @tool()
    async def rag_query(
        query: Annotated[str, Field(description="The question")],
        topK: Annotated[int, Field(description="Passages of evidence to read (1-50)", ge=1, le=50)] = 5,
    ) -> dict[str, Any]:
        """A grounded answer with citations from the stored documents."""
        return await mesh.query(query, topK)

    @tool()
    async def voice_question(
        audioPath: Annotated[str, Field(description="A recording on this machine (or use audioBase64)")] = "",
        audioBase64: Annotated[str, Field(description="The recording's bytes, base64")] = "",
        documentIds: Annotated[list[str] | None, Field(description="Only these stored documents (ids)")] = None,
        topK: Annotated[int, Field(description="Passages of evidence to read; 0: the default", ge=0, le=50)] = 0,
    ) -> dict[str, Any]:
        """Answer a spoken question (a recording: WAV, MP3, M4A, OGG/Opus, FLAC, WebM, MP4) from the stored
        documents: give a local file path or base64 bytes. Returns the transcript and a cited answer."""
        return await mesh.voice(_recording(audioPath, audioBase64), documentIds or [], topK)

    @tool()
    async def knowledge_graph_query(
        query: Annotated[str, Field(description="Read-only Cypher, or a plain question about topics and entities")],
    ) -> dict[str, Any]:
        """Query the knowledge graph: read-only Cypher, or a plain question about topics and entities."""
        return (await mesh.tool("knowledge_graph_query", {"query": query}))["result"]

    # -- the seed AI/ML server's seven ------------------------------------------------------
    @tool()
    async def agentic_document_brief(
        document: Annotated[str, Field(description="The document's text")],
        question: Annotated[str, Field(description="A question to answer from it, with citations")] = "",
        translate_lang: Annotated[str, Field(description="A language to translate the overview into, e.g. es")] = "",
    ) -> dict[str, Any]:
        """Full analysis of a document: overview, topics, an answer with citations, the crew's review,
        sentiment, and a translation when a language is given."""
        return await mesh.brief(document, question, translate_lang)

    @tool()
    async def semantic_document_search(
        query: Annotated[str, Field(description="What to look for")],
        document: Annotated[str, Field(description="A document's text (stored first; identical text is stored"
                                                   " once), or use documentId")] = "",
        documentId: DocumentRef = "",
    ) -> dict[str, Any]:
        """Search inside one document: a stored one (documentId) or the text given."""
        if documentId.strip():
            document_id = await mesh.document_id(documentId)
            return {"document_id": document_id, **await mesh.search(query, 5, [document_id])}
        return await mesh.search_in(document, query)

    @tool()
    async def quick_topics(
        document: Annotated[str, Field(description="A document's text (or use documentId)")] = "",
        documentId: DocumentRef = "",
    ) -> dict[str, Any]:
        """Weighted topics of a document (stored, or the text given)."""
        return await mesh.nlp("topics", document, documentId)

    @tool()
    async def vector_upsert(
        document: Annotated[str, Field(description="The text to store")],
        doc_id: Annotated[str, Field(description="Names the stored file <doc_id>.txt")] = "",
        metadata: Annotated[dict[str, Any] | None, Field(description='{"filename": ...} names the file')] = None,
    ) -> dict[str, Any]:
        """Store a document: parsed, chunked, embedded and indexed for search."""
        filename = str((metadata or {}).get("filename") or (f"{doc_id}.txt" if doc_id else "mcp-document.txt"))
        return await mesh.ingest(document, filename)

    @tool()
    async def vector_search(
        query: Annotated[str, Field(description="What to look for")],
        n_results: Annotated[int, Field(description="How many passages", ge=1, le=50)] = 5,
    ) -> dict[str, Any]:
        """Semantic (embedding) search over the stored documents."""
        return await mesh.search(query, n_results, dense_only=True)

    @tool()
    async def graph_upsert(
        document: Annotated[str, Field(description="The text whose topics and entities to add")],
        metadata: Annotated[dict[str, Any] | None, Field(description='{"doc_id": ..., "title": ...}')] = None,
    ) -> dict[str, Any]:
        """Add a document's topics and entities to the knowledge graph."""
        return await mesh.graph_upsert(document, metadata or {})

    @tool()
    async def graph_query(
        query: Annotated[str, Field(description="A read-only Cypher query, e.g. MATCH (d:Document) RETURN d.title")],
        params: Annotated[dict[str, Any] | None, Field(description="Its $parameters")] = None,
    ) -> dict[str, Any]:
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
