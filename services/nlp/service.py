"""Wires the NLP service into the shared runtime."""

from __future__ import annotations

import asyncio
import logging

from docuthinker.nlp.v1 import nlp_service_pb2, nlp_service_pb2_grpc
from services.clients.rag import RagClient
from services.nlp.operations import NlpOperations
from services.nlp.servicer import NlpServicer
from services.nlp.settings import NlpSettings
from services.nlp.sources import RagDocumentTexts
from services.providers.router import Router
from services.providers.settings import ProviderSettings
from services.runtime import ChannelPool, MeshSettings, ServiceBinding

FULL_NAME = nlp_service_pb2.DESCRIPTOR.services_by_name["NlpService"].full_name
log = logging.getLogger("docuthinker.nlp")


def binding(settings: MeshSettings, nlp: NlpSettings | None = None, *, warm_up: bool = True) -> ServiceBinding:
    ops = NlpOperations.from_settings(nlp or NlpSettings(), Router.from_settings(ProviderSettings()))
    channels = ChannelPool(settings)
    documents = RagDocumentTexts(RagClient(channels))
    servicer = NlpServicer(ops, documents)
    background: set[asyncio.Task] = set()

    async def on_start() -> None:
        if warm_up:
            # Models load in the background: the server reports SERVING at once, and a
            # request that arrives first simply waits for the same lazy load.
            task = asyncio.create_task(asyncio.to_thread(_warm, ops))
            background.add(task)
            task.add_done_callback(background.discard)

    return ServiceBinding(
        name="nlp",
        full_names=[FULL_NAME],
        register=lambda server: nlp_service_pb2_grpc.add_NlpServiceServicer_to_server(servicer, server),
        on_start=on_start,
        channels=channels,
    )


def _warm(ops: NlpOperations) -> None:
    try:
        ops.warm_up()
    except Exception:
        log.exception("model warm-up failed")
