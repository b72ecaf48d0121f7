"""The typed async client of the RAG service, for the other services and tools.

Typed calls return plain dataclasses (``document_text``); the answer calls return the
contract's ``Answer`` for the adapters that render it (the chat API), and ``query``,
``search``, ``ingest_text`` and ``spoken_query`` return JSON (proto field names) with the
LLM spend, for callers that pass results on (the orchestrator's operations, the MCP tools).
Failures raise ``errors.remote_error``'s domain error, the RAG service's status intact.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from google.api import httpbody_pb2
from google.protobuf import json_format

from docuthinker.rag.v1 import answers_pb2
from docuthinker.rag.v1 import rag_service_pb2 as pb
from docuthinker.rag.v1 import rag_service_pb2_grpc as pb_grpc
from services.clients.nlp import LlmUsage
from services.runtime.clients import ServiceClient


@dataclass(frozen=True)
class DocumentText:
    document_id: str
    filename: str
    title: str
    sections: tuple[str, ...]
    """Pages, sheets or heading blocks, in order."""


@dataclass(frozen=True)
class Answered:
    data: dict[str, Any]
    """The answer as JSON (proto field names), plus what the call adds (a transcript)."""
    usage: LlmUsage


class RagApi(Protocol):
    async def document_text(self, document_id: str) -> DocumentText: ...

    async def ingest_text(self, text: str, filename: str, timeout: float | None = None) -> dict[str, Any]: ...

    async def query(self, question: str, top_k: int = 0, document_ids: Sequence[str] = (),
                    timeout: float | None = None) -> Answered: ...

    async def spoken_query(self, audio: bytes, top_k: int = 0, document_ids: Sequence[str] = ()) -> Answered: ...

    async def search(self, query: str, top_k: int = 0, document_ids: Sequence[str] = (),
                     dense_only: bool = False) -> dict[str, Any]: ...


class RagClient(ServiceClient):
    SERVICE = "rag"
    STUB = pb_grpc.RagServiceStub

    async def document_text(self, document_id: str) -> DocumentText:
        reply = await self._unary("GetDocumentText", pb.GetDocumentTextRequest(document_id=document_id))
        return DocumentText(document_id, reply.document.filename, reply.document.title,
                            tuple(section.text for section in reply.sections))

    async def list_documents(self, limit: int = 1000) -> list[dict[str, Any]]:
        """The tenant's documents as JSON (proto field names), newest first, at most ``limit``."""
        found: list[dict[str, Any]] = []
        token = ""
        while len(found) < limit:
            reply = await self._unary("ListDocuments", pb.ListDocumentsRequest(page_size=100, page_token=token))
            found.extend(_json(d) for d in reply.documents)
            token = reply.next_page_token
            if not token:
                break
        return found[:limit]

    async def ingest_text(self, text: str, filename: str, timeout: float | None = None) -> dict[str, Any]:
        """Stores ``text`` as a plain-text document; the ``IngestResult`` as JSON."""
        request = pb.IngestDocumentRequest(
            filename=filename,
            file=httpbody_pb2.HttpBody(content_type="text/plain; charset=utf-8", data=text.encode("utf-8")),
        )
        reply = await self._unary("IngestDocument", request, timeout=timeout)
        return _json(reply.result)

    async def answer(self, question: str, top_k: int = 0, document_ids: Sequence[str] = (), *, agent: bool = False,
                     metadata: Sequence[tuple[str, str]] = (), timeout: float | None = None) -> answers_pb2.Answer:
        """The grounded answer (the agent graph's with ``agent``)."""
        if agent:
            request: Any = pb.AgentQueryRequest(question=question, top_k=top_k, document_ids=document_ids)
            reply = await self._unary("AgentQuery", request, metadata=metadata, timeout=timeout)
        else:
            request = pb.QueryRequest(question=question, top_k=top_k, document_ids=document_ids)
            reply = await self._unary("Query", request, metadata=metadata, timeout=timeout)
        return reply.answer

    def stream_answer(self, question: str, top_k: int = 0, document_ids: Sequence[str] = (), *,
                      metadata: Sequence[tuple[str, str]] = (),
                      timeout: float | None = None) -> AsyncGenerator[pb.StreamQueryResponse, None]:
        request = pb.StreamQueryRequest(question=question, top_k=top_k, document_ids=document_ids)
        return self._stream("StreamQuery", request, metadata=metadata, timeout=timeout)

    async def query(self, question: str, top_k: int = 0, document_ids: Sequence[str] = (),
                    timeout: float | None = None) -> Answered:
        answer = await self.answer(question, top_k, document_ids, timeout=timeout)
        return Answered(_json(answer), _usage(answer))

    async def spoken_query(self, audio: bytes, top_k: int = 0, document_ids: Sequence[str] = ()) -> Answered:
        request = pb.SpokenQueryRequest(audio=httpbody_pb2.HttpBody(data=bytes(audio)), top_k=top_k,
                                        document_ids=document_ids)
        reply = await self._unary("SpokenQuery", request)
        data = {**_json(reply).get("answer", {}), "transcript": reply.transcript, "language": reply.language,
                "audio_seconds": reply.audio_seconds, "speech_model": reply.speech_model}
        return Answered(data, _usage(reply.answer))

    async def search(self, query: str, top_k: int = 0, document_ids: Sequence[str] = (),
                     dense_only: bool = False, *, metadata: Sequence[tuple[str, str]] = (),
                     timeout: float | None = None) -> dict[str, Any]:
        fusion = pb.FUSION_METHOD_DENSE_ONLY if dense_only else pb.FUSION_METHOD_UNSPECIFIED
        request = pb.SearchRequest(query=query, top_k=top_k, document_ids=document_ids, fusion=fusion)
        return _json(await self._unary("Search", request, metadata=metadata, timeout=timeout))

    async def analyze_document(self, text: str, question: str = "", translate_lang: str = "",
                               timeout: float | None = None) -> dict[str, Any]:
        request = pb.AnalyzeDocumentRequest(text=text, question=question, translate_lang=translate_lang)
        return _json(await self._unary("AnalyzeDocument", request, timeout=timeout))


def _json(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def _usage(answer: answers_pb2.Answer) -> LlmUsage:
    usage = answer.usage
    return LlmUsage(answer.engine.provider, answer.engine.model, usage.input_tokens, usage.output_tokens,
                    usage.cache_read_tokens, usage.cache_write_tokens, usage.cost_usd)
