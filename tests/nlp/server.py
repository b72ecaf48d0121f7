"""The real NLP servicer on a real port, for the tests that talk to it over gRPC."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc

from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from services.clients.rag import RagClient
from services.nlp.generation import TextGenerator
from services.nlp.operations import NlpOperations
from services.nlp.servicer import NlpServicer
from services.nlp.settings import NlpSettings
from services.nlp.sources import RagDocumentTexts
from services.runtime import ChannelPool, MeshSettings, ServiceBinding, create_server


@asynccontextmanager
async def serve_nlp(mesh: MeshSettings, settings: NlpSettings, generator: TextGenerator
                    ) -> AsyncIterator[pb_grpc.NlpServiceStub]:
    """The real NLP servicer on a free port, with ``generator`` as its provider layer."""
    channels = ChannelPool(mesh)
    documents = RagDocumentTexts(RagClient(channels))
    servicer = NlpServicer(NlpOperations(settings, generator), documents)
    binding = ServiceBinding(
        name="nlp",
        full_names=["docuthinker.nlp.v1.NlpService"],
        register=lambda server: pb_grpc.add_NlpServiceServicer_to_server(servicer, server),
        channels=channels,
    )
    running = await create_server(binding, mesh, port=0)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{running.port}")
    try:
        yield pb_grpc.NlpServiceStub(channel)
    finally:
        await channel.close()
        await running.stop(0)
