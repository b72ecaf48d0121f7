"""Test doubles at the NLP service's port boundaries: the LLM provider layer and the RAG service."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from docuthinker.rag.v1 import rag_service_pb2 as rag_pb
from docuthinker.rag.v1 import rag_service_pb2_grpc as rag_grpc
from services.providers.base import GenerationRequest, GenerationResult, TextBlock, Usage
from services.runtime import request_context
from services.runtime.errors import FailedPrecondition


@dataclass
class ScriptedGenerator:
    """Answers each task with ``reply(task, request)``; records every call."""

    reply: Callable[[str, GenerationRequest], str]
    provider: str = "fake"
    model: str = "scripted-1"
    usage: Usage = field(default_factory=Usage)
    """What every call reports it cost."""
    calls: list[tuple[str, GenerationRequest]] = field(default_factory=list)

    async def generate(self, task: str, request: GenerationRequest) -> GenerationResult:
        self.calls.append((task, request))
        return GenerationResult([TextBlock(self.reply(task, request))], self.usage, self.provider, self.model)


class NoProviders:
    """Behaves like the router with nothing configured for any task."""

    async def generate(self, task: str, request: GenerationRequest) -> GenerationResult:
        raise FailedPrecondition(
            f"no LLM provider can serve task {task!r}: set ANTHROPIC_API_KEY to enable a provider",
            reason="NO_PROVIDER_AVAILABLE",
        )


class FakeRag(rag_grpc.RagServiceServicer):
    """GetDocumentText over a dict of (tenant, document id) -> sections; records the tenants seen."""

    def __init__(self) -> None:
        self.documents: dict[tuple[str, str], list[str]] = {}
        self.tenants: list[str] = []

    async def GetDocumentText(self, request, context):
        metadata = dict(context.invocation_metadata())
        tenant = metadata.get(request_context.TENANT_HEADER, "default")
        self.tenants.append(tenant)
        sections = self.documents.get((tenant, request.document_id))
        if sections is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no document {request.document_id}")
        return rag_pb.GetDocumentTextResponse(
            sections=[rag_pb.GetDocumentTextResponse.Section(text=s) for s in sections]
        )
