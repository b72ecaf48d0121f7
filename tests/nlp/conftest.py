"""NLP fixtures: the real models (loaded once per session) and an in-process NLP server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest

from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from docuthinker.rag.v1 import rag_service_pb2_grpc as rag_grpc
from services.nlp.settings import NlpSettings
from services.nlp.spacy_pipeline import SpacyPipeline, get_pipeline
from services.runtime import MeshSettings
from tests.support.fake_services import FakeRag

from .fakes import NoProviders
from .server import serve_nlp


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

    settings = NlpSettings(max_text_chars=50_000, max_generation_chars=5_000)
    try:
        async with serve_nlp(MeshSettings(rag_port=rag_port), settings, NoProviders()) as stub:
            yield NlpServer(stub, rag, settings)
    finally:
        await rag_server.stop(0)
