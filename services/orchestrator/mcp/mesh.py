"""What the MCP server's tools do: calls to the running mesh through the typed clients.

Addresses come from the mesh settings (``DOCUTHINKER_*_PORT``, ``DOCUTHINKER_HOST``); every
call carries the MCP tenant (``DOCUTHINKER_MCP_TENANT``) and a request id, like any other
client of the mesh. A failed call raises the clients' domain error (``errors.remote_error``),
which the MCP server shows the host as a tool error.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

from services.clients.graph import DocumentUpsert, GraphClient
from services.clients.nlp import NlpClient
from services.clients.orchestrator import OrchestratorClient
from services.clients.rag import RagClient
from services.orchestrator.mcp import documents
from services.runtime import request_context
from services.runtime.clients import ChannelPool
from services.runtime.config import MeshSettings
from services.runtime.errors import InvalidArgument

LONG_CALL_S = 300.0


def _document_id(text: str, given: str = "") -> str:
    return given or "mcp-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class MeshGateway:
    def __init__(self, settings: MeshSettings, tenant: str) -> None:
        self._tenant = tenant or settings.default_tenant
        self._channels = ChannelPool(settings)
        self._nlp = NlpClient(self._channels)
        self._rag = RagClient(self._channels)
        self._graph = GraphClient(self._channels)
        self._orchestrator = OrchestratorClient(self._channels)

    @contextmanager
    def _as_tenant(self) -> Iterator[None]:
        token = request_context.bind(request_context.RequestContext(f"mcp-{uuid.uuid4().hex}", self._tenant))
        try:
            yield
        finally:
            request_context.unbind(token)

    async def close(self) -> None:
        await self._channels.close()

    # -- the library ---------------------------------------------------------------------
    async def documents(self) -> list[dict[str, Any]]:
        with self._as_tenant():
            return await self._rag.list_documents()

    async def document_id(self, reference: str) -> str:
        """The id of the stored document ``reference`` names (an id, its start, or a file name)."""
        return str(documents.resolve(reference, await self.documents())["document_id"])

    async def source(self, text: str, document: str) -> dict[str, str]:
        """What an NLP operation reads: inline ``text`` or a stored ``document`` (exactly one)."""
        if bool(text.strip()) == bool(document.strip()):
            raise InvalidArgument("give exactly one of text (inline) or documentId (a stored document: its id, the"
                                  " first characters of its id, or its file name; see list_documents)",
                                  reason="ONE_SOURCE")
        return {"text": text} if text.strip() else {"document_id": await self.document_id(document)}

    # -- NLP ------------------------------------------------------------------------------
    async def nlp(self, operation: str, text: str, document: str = "", **options: Any) -> dict[str, Any]:
        """An NLP operation (``services.clients.nlp.OPERATIONS``) on inline text or a stored document, as JSON."""
        source = await self.source(text, document)
        with self._as_tenant():
            data = (await self._nlp.analysis(operation, source, timeout=LONG_CALL_S, **options)).data
        return {**({"document_id": source["document_id"]} if "document_id" in source else {}), **data}

    async def summarize(self, text: str, bullets: bool = False, document: str = "") -> dict[str, Any]:
        return await self.nlp("summarize", text, document, style="bullets" if bullets else "narrative")

    # -- orchestrator ---------------------------------------------------------------------
    async def chat(self, message: str, document_text: str, document: str = "") -> dict[str, Any]:
        document_id = await self.document_id(document) if document.strip() else ""
        intent = "chat.document" if document_text or document_id else "chat.general"
        with self._as_tenant():
            return await self._orchestrator.task(intent, "chat", message=message, text=document_text,
                                                 document_id=document_id, timeout=LONG_CALL_S)

    async def voice(self, audio: bytes, document_ids: list[str], top_k: int) -> dict[str, Any]:
        """A spoken question through the orchestrator's ``chat.voice`` intent."""
        with self._as_tenant():
            return await self._orchestrator.task("chat.voice", "answer", audio=audio, document_ids=document_ids,
                                                 options={"top_k": top_k} if top_k else None, timeout=LONG_CALL_S)

    async def health(self) -> dict[str, Any]:
        with self._as_tenant():
            return await self._orchestrator.health()

    async def costs(self, period: str) -> dict[str, Any]:
        with self._as_tenant():
            return await self._orchestrator.costs(period)

    async def tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        with self._as_tenant():
            return await self._orchestrator.execute_tool(name, arguments)

    # -- RAG ------------------------------------------------------------------------------
    async def query(self, question: str, top_k: int) -> dict[str, Any]:
        with self._as_tenant():
            return (await self._rag.query(question, top_k, timeout=LONG_CALL_S)).data

    async def ingest(self, text: str, filename: str) -> dict[str, Any]:
        with self._as_tenant():
            return await self._rag.ingest_text(text, filename, timeout=LONG_CALL_S)

    async def search(self, query: str, top_k: int, document_ids: list[str] | None = None,
                     dense_only: bool = False) -> dict[str, Any]:
        with self._as_tenant():
            return await self._rag.search(query, top_k, document_ids or [], dense_only=dense_only)

    async def search_in(self, document: str, query: str, top_k: int = 5) -> dict[str, Any]:
        stored = await self.ingest(document, f"{_document_id(document)}.txt")
        document_id = stored["document"]["document_id"]
        found = await self.search(query, top_k, [document_id])
        return {"document_id": document_id, **found}

    async def brief(self, document: str, question: str, translate_lang: str) -> dict[str, Any]:
        with self._as_tenant():
            return await self._rag.analyze_document(document, question, translate_lang, timeout=LONG_CALL_S)

    # -- graph ----------------------------------------------------------------------------
    async def graph_upsert(self, document: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
        with self._as_tenant():
            topics = await self._nlp.topics(document)
            entities = await self._nlp.entities(document)
            document_id = _document_id(document, str(metadata.get("doc_id") or metadata.get("document_id") or ""))
            title = str(metadata.get("title") or document.strip().splitlines()[0][:120])
            upsert = DocumentUpsert(document_id, title, "text", tuple((t.name, t.weight) for t in topics),
                                    tuple((e.text, e.label, e.count or 1) for e in entities))
            written = await self._graph.upsert_documents([upsert], timeout=LONG_CALL_S)
        return {"document_id": document_id, "title": title, **asdict(written)}

    async def graph_query(self, cypher: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        with self._as_tenant():
            result = await self._graph.query(cypher, dict(params or {}))
        return {"columns": list(result.columns), "rows": list(result.rows), "truncated": result.truncated}

    # -- evaluation sets (services/orchestrator/mcp/evals.py) -----------------------------------
    async def orchestrator_call(self, method: str, request: Any) -> dict[str, Any]:
        """One unary orchestrator RPC as the MCP tenant; the reply as JSON (proto field names)."""
        from google.protobuf import json_format

        with self._as_tenant():
            reply = await self._orchestrator._unary(method, request, timeout=LONG_CALL_S)
        return json_format.MessageToDict(reply, preserving_proto_field_name=True)
