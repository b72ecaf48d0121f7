"""NLP fixtures: the real models (loaded once per session) and an in-process NLP server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest

from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from docuthinker.rag.v1 import rag_service_pb2_grpc as rag_grpc
from services.nlp.operations import NlpOperations
from services.nlp.servicer import NlpServicer
from services.nlp.settings import NlpSettings
from services.nlp.sources import RagDocumentTexts
from services.nlp.spacy_pipeline import SpacyPipeline, get_pipeline
from services.runtime import MeshSettings, ServiceBinding, create_server
from .fakes import FakeRag, NoProviders


@pytest.fixture(scope="session")
def pipeline() -> SpacyPipeline:
    return get_pipeline(NlpSettings().spacy_model)


@dataclass
class NlpServer:
    stub: pb_grpc.NlpServiceStub
    rag: FakeRag
    settings: NlpSettings


@pytest.fixture(scope="session")
async def nlp_server() -> AsyncIterator[NlpServer]:
    """The real servicer and domain code on a real port; RAG is a fake at its gRPC boundary and no
    LLM provider is configured (generative operations take their documented offline paths)."""
    rag = FakeRag()
    rag_server = grpc.aio.server()
    rag_grpc.add_RagServiceServicer_to_server(rag, rag_server)
    rag_port = rag_server.add_insecure_port("127.0.0.1:0")
    await rag_server.start()

    mesh = MeshSettings(rag_port=rag_port)
    settings = NlpSettings(max_text_chars=50_000, max_generation_chars=5_000)
    documents = RagDocumentTexts(mesh)
    servicer = NlpServicer(NlpOperations(settings, NoProviders()), documents)
    binding = ServiceBinding(
        name="nlp",
        full_names=["docuthinker.nlp.v1.NlpService"],
        register=lambda server: pb_grpc.add_NlpServiceServicer_to_server(servicer, server),
    )
    running = await create_server(binding, mesh, port=0)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{running.port}")
    try:
        yield NlpServer(pb_grpc.NlpServiceStub(channel), rag, settings)
    finally:
        await channel.close()
        await documents.close()
        await running.stop(0)
        await rag_server.stop(0)
