"""What the MCP server's tools do: calls to the running mesh over gRPC.

Addresses come from the mesh settings (``DOCUTHINKER_*_PORT``, ``DOCUTHINKER_HOST``); every
call carries the MCP tenant (``DOCUTHINKER_MCP_TENANT``) and a request id, like any other
client of the mesh. A failed call becomes ``McpCallError`` with the service, the gRPC code
and the server's message, which the MCP host sees as a tool error.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import grpc
from google.api import httpbody_pb2
from google.protobuf import json_format

from docuthinker.graph.v1 import graph_service_pb2 as graph_pb
from docuthinker.graph.v1 import graph_service_pb2_grpc as graph_grpc
from docuthinker.nlp.v1 import nlp_service_pb2 as nlp_pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as nlp_grpc
from docuthinker.orchestrator.v1 import orchestrator_service_pb2 as orch_pb
from docuthinker.orchestrator.v1 import orchestrator_service_pb2_grpc as orch_grpc
from docuthinker.rag.v1 import rag_service_pb2 as rag_pb
from docuthinker.rag.v1 import rag_service_pb2_grpc as rag_grpc
from services.orchestrator.wire import struct
from services.runtime import request_context
from services.runtime.channels import service_channel
from services.runtime.config import MeshSettings

LONG_CALL_S = 300.0
_STUBS: dict[str, Callable[[grpc.aio.Channel], Any]] = {
    "nlp": nlp_grpc.NlpServiceStub,
    "rag": rag_grpc.RagServiceStub,
    "graph": graph_grpc.GraphServiceStub,
    "orchestrator": orch_grpc.OrchestratorServiceStub,
}


class McpCallError(RuntimeError):
    """A mesh call made by an MCP tool failed."""

    def __init__(self, message: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(message)
        self.code = code


def as_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def _document_id(text: str, given: str = "") -> str:
    return given or "mcp-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class MeshGateway:
    def __init__(self, settings: MeshSettings, tenant: str) -> None:
        self._settings = settings
        self._tenant = tenant or settings.default_tenant
        self._channels: dict[str, grpc.aio.Channel] = {}

    def _stub(self, service: str) -> Any:
        # Channels are made on first use: they must belong to the running event loop.
        if service not in self._channels:
            self._channels[service] = service_channel(service, self._settings)
        return _STUBS[service](self._channels[service])

    async def call(self, service: str, method: str, request: Any, timeout: float | None = None) -> Any:
        token = request_context.bind(request_context.RequestContext(f"mcp-{uuid.uuid4().hex}", self._tenant))
        try:
            return await getattr(self._stub(service), method)(request, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise McpCallError(f"{service}.{method} failed: {exc.code().name}: {exc.details()}", exc.code()) from None
        finally:
            request_context.unbind(token)

    async def stream(self, service: str, method: str, request: Any, timeout: float | None = None) -> list[Any]:
        token = request_context.bind(request_context.RequestContext(f"mcp-{uuid.uuid4().hex}", self._tenant))
        try:
            return [event async for event in getattr(self._stub(service), method)(request, timeout=timeout)]
        except grpc.aio.AioRpcError as exc:
            raise McpCallError(f"{service}.{method} failed: {exc.code().name}: {exc.details()}", exc.code()) from None
        finally:
            request_context.unbind(token)

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()

    # -- NLP ------------------------------------------------------------------------------
    async def nlp(self, method: str, request: Any) -> dict[str, Any]:
        return as_dict(await self.call("nlp", method, request, timeout=LONG_CALL_S))

    async def summarize(self, text: str, bullets: bool = False) -> dict[str, Any]:
        style = nlp_pb.SUMMARY_STYLE_BULLETS if bullets else nlp_pb.SUMMARY_STYLE_NARRATIVE
        return await self.nlp("Summarize", nlp_pb.SummarizeRequest(text=text, style=style))

    # -- orchestrator ---------------------------------------------------------------------
    async def chat(self, message: str, document_text: str) -> dict[str, Any]:
        intent = "chat.document" if document_text else "chat.general"
        events = await self.stream(
            "orchestrator", "Process", orch_pb.ProcessRequest(intent=intent, message=message, text=document_text),
            timeout=LONG_CALL_S,
        )
        for event in events:
            if event.WhichOneof("event") == "subtask" and event.subtask.task_id == "chat":
                if event.subtask.state != orch_pb.TASK_STATE_SUCCEEDED:
                    raise McpCallError(f"chat failed: {event.subtask.error.message}")
                return as_dict(event.subtask.data)
            if event.WhichOneof("event") == "error":
                raise McpCallError(f"chat failed: {event.error.message}")
        raise McpCallError("chat produced no answer")

    async def voice(self, audio: bytes, document_ids: list[str], top_k: int) -> dict[str, Any]:
        """A spoken question through the orchestrator's ``chat.voice`` intent."""
        request = orch_pb.ProcessRequest(intent="chat.voice", audio=audio, document_ids=document_ids)
        if top_k:
            request.options.update({"top_k": top_k})
        events = await self.stream("orchestrator", "Process", request, timeout=LONG_CALL_S)
        for event in events:
            if event.WhichOneof("event") == "subtask" and event.subtask.task_id == "answer":
                if event.subtask.state != orch_pb.TASK_STATE_SUCCEEDED:
                    raise McpCallError(f"voice question failed: {event.subtask.error.message}")
                return as_dict(event.subtask.data)
            if event.WhichOneof("event") == "error":
                raise McpCallError(f"voice question failed: {event.error.message}")
        raise McpCallError("the voice question produced no answer")

    # -- RAG ------------------------------------------------------------------------------
    async def ingest(self, text: str, filename: str) -> dict[str, Any]:
        reply = await self.call(
            "rag",
            "IngestDocument",
            rag_pb.IngestDocumentRequest(
                filename=filename,
                file=httpbody_pb2.HttpBody(content_type="text/plain; charset=utf-8", data=text.encode("utf-8")),
            ),
            timeout=LONG_CALL_S,
        )
        return as_dict(reply.result)

    async def search(self, query: str, top_k: int, document_ids: list[str] | None = None,
                     dense_only: bool = False) -> dict[str, Any]:
        fusion = rag_pb.FUSION_METHOD_DENSE_ONLY if dense_only else rag_pb.FUSION_METHOD_UNSPECIFIED
        request = rag_pb.SearchRequest(query=query, top_k=top_k, document_ids=document_ids or [], fusion=fusion)
        return as_dict(await self.call("rag", "Search", request))

    async def search_in(self, document: str, query: str, top_k: int = 5) -> dict[str, Any]:
        stored = await self.ingest(document, f"{_document_id(document)}.txt")
        document_id = stored["document"]["document_id"]
        found = await self.search(query, top_k, [document_id])
        return {"document_id": document_id, **found}

    async def brief(self, document: str, question: str, translate_lang: str) -> dict[str, Any]:
        request = rag_pb.AnalyzeDocumentRequest(text=document, question=question, translate_lang=translate_lang)
        return as_dict(await self.call("rag", "AnalyzeDocument", request, timeout=LONG_CALL_S))

    # -- graph ----------------------------------------------------------------------------
    async def graph_upsert(self, document: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
        topics = (await self.nlp("ExtractTopics", nlp_pb.ExtractTopicsRequest(text=document))).get("topics", [])
        entities = (await self.nlp("ExtractEntities", nlp_pb.ExtractEntitiesRequest(text=document))).get(
            "entities", [])
        document_id = _document_id(document, str(metadata.get("doc_id") or metadata.get("document_id") or ""))
        title = str(metadata.get("title") or document.strip().splitlines()[0][:120])

        async def facts() -> AsyncIterator[graph_pb.UpsertDocumentFactsRequest]:
            yield graph_pb.UpsertDocumentFactsRequest(
                document=graph_pb.DocumentNode(document_id=document_id, title=title, file_type="text"))
            for topic in topics:
                yield graph_pb.UpsertDocumentFactsRequest(
                    topic=graph_pb.TopicFact(name=topic["name"], weight=float(topic.get("weight", 0))))
            for entity in entities:
                yield graph_pb.UpsertDocumentFactsRequest(
                    entity=graph_pb.EntityFact(name=entity["text"], type=entity.get("label", ""),
                                               count=int(entity.get("count", 1))))

        written = await self.call("graph", "UpsertDocumentFacts", facts(), timeout=LONG_CALL_S)
        return {"document_id": document_id, "title": title, **as_dict(written)}

    async def graph_query(self, cypher: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        request = graph_pb.QueryGraphRequest(cypher=cypher, params=struct(dict(params or {})))
        return as_dict(await self.call("graph", "QueryGraph", request))
