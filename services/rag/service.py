"""Wires the RAG service into the shared runtime.

Startup (before SERVING): load the embedding model (hash-checked), open the stores, rebuild
FAISS from Chroma; then resume documents a crash left mid-ingestion, in the background.
"""

from __future__ import annotations

import asyncio

from docuthinker.rag.v1 import rag_service_pb2, rag_service_pb2_grpc
from services.rag.answer_setup import build_answering, graph_related
from services.rag.graph_sync import GraphSync
from services.rag.ingest.embedding import TextEmbedder
from services.rag.runtime import RagRuntime
from services.rag.servicer import RagServicer
from services.rag.settings import RagSettings
from services.runtime import MeshSettings, ServiceBinding

FULL_NAME = rag_service_pb2.DESCRIPTOR.services_by_name["RagService"].full_name


class RagService:
    """The service's lifecycle; ``runtime`` (stores, pipeline, catalog) exists between start and stop."""

    def __init__(
        self,
        settings: MeshSettings,
        rag: RagSettings | None = None,
        embedder: TextEmbedder | None = None,
        graph_sync: GraphSync | None = None,
    ) -> None:
        self.settings = settings
        self.rag = rag or RagSettings()
        self._embedder = embedder
        self._graph_sync = graph_sync
        self.servicer = RagServicer(settings.max_upload_bytes)
        self.runtime: RagRuntime | None = None
        self.resume_task: asyncio.Task | None = None

    async def start(self) -> None:
        model = self._embedder
        if model is None:
            from services.models.embedder import get_embedder

            model = await asyncio.to_thread(get_embedder)
        self.runtime = await asyncio.to_thread(
            RagRuntime.open, self.settings.data_dir, self.rag, self.settings.max_upload_bytes, model, self._graph_sync
        )
        self.servicer.attach(self.runtime.pipeline, self.runtime.catalog)
        self.servicer.attach_answers(*build_answering(
            self.runtime.index, self.runtime.metadata, model, related_documents=graph_related(self.settings)))
        self.resume_task = asyncio.get_running_loop().create_task(
            self.runtime.pipeline.resume_unfinished(enabled=self.rag.resume_on_startup)
        )

    async def stop(self) -> None:
        if self.resume_task is not None:
            self.resume_task.cancel()
            await asyncio.gather(self.resume_task, return_exceptions=True)
        if self.runtime is not None:
            await self.runtime.close()
            self.runtime = None

    def binding(self) -> ServiceBinding:
        return ServiceBinding(
            name="rag",
            full_names=[FULL_NAME],
            register=lambda server: rag_service_pb2_grpc.add_RagServiceServicer_to_server(self.servicer, server),
            on_start=self.start,
            on_stop=self.stop,
        )


def binding(settings: MeshSettings) -> ServiceBinding:
    return RagService(settings).binding()
