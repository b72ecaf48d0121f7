"""Wires the RAG service into the shared runtime.

Startup (before SERVING): load the embedding model (hash-checked), open the stores, reload
FAISS (HNSW snapshots, the rest from the vector log); wire the sentence-cache warm-up; then resume documents a crash left mid-ingestion, in the background, and
start the graph-sync worker (``graph_link``) when a graph feed is wired (``binding`` does).
"""

from __future__ import annotations

import asyncio
import functools

import grpc

from docuthinker.rag.v1 import rag_service_pb2, rag_service_pb2_grpc
from services.clients.graph import GraphClient
from services.providers.router import Router
from services.providers.settings import ProviderSettings
from services.rag.analysis.settings import AnalysisSettings
from services.rag.analysis.setup import build_analysis
from services.rag.answers import spans
from services.rag.answers.settings import AnswerSettings
from services.rag.answers.setup import build_answering, graph_related
from services.rag.answers.vectors import CachedEncoder
from services.rag.crew import CrewSettings
from services.rag.graph_sync.feed import GraphFeed, mesh_feed
from services.rag.graph_sync.link import GraphLink
from services.rag.graph_sync.port import GraphSync
from services.rag.graph_sync.settings import GraphSyncSettings
from services.rag.ingest.embedding import TextEmbedder
from services.rag.runtime import RagRuntime, metadata_path
from services.rag.sentence_warmup import SentenceWarmer
from services.rag.servicer import RagServicer
from services.rag.settings import RagSettings
from services.rag.sources.settings import SourcesSettings
from services.rag.sources.setup import SourcesLink
from services.rag.speech_setup import build_speech, warm_up
from services.rag.spoken import SpokenQuestions
from services.rag.versions.catalog import VersionCatalog
from services.rag.versions.changes import ChangeQuestions
from services.rag.versions.search import VersionedIndex, VersionedLookup
from services.rag.viewing.span_boxes import span_locator
from services.runtime import ChannelPool, MeshSettings, ServiceBinding
from services.speech import SpeechSettings
from services.speech.transcriber import WhisperTranscriber
from services.storage.settings import StorageSettings

FULL_NAME = rag_service_pb2.DESCRIPTOR.services_by_name["RagService"].full_name


class RagService:
    """The service's lifecycle; ``runtime`` (stores, pipeline, catalog) exists between start and stop."""

    def __init__(
        self,
        settings: MeshSettings,
        rag: RagSettings | None = None,
        embedder: TextEmbedder | None = None,
        graph_sync: GraphSync | None = None,
        graph_feed: GraphFeed | None = None,
        graph_settings: GraphSyncSettings | None = None,
        speech: SpeechSettings | None = None,
        channels: ChannelPool | None = None,
        router: Router | None = None,
        storage: StorageSettings | None = None,
        sources: SourcesSettings | None = None,
    ) -> None:
        """Without ``graph_feed`` (or with an explicit ``graph_sync``) no outbox or worker runs.

        The one place the service's settings are read from the environment (what is not passed in);
        everything below gets them as arguments."""
        self.settings = settings
        self.channels = channels or ChannelPool(settings)
        self.rag = rag or RagSettings()
        self._embedder = embedder
        self._graph_sync = graph_sync
        self._graph_feed = graph_feed
        self.graph_settings = graph_settings or GraphSyncSettings()
        self.speech = speech or SpeechSettings()
        self.storage = storage or StorageSettings()
        self.sources_settings = sources or SourcesSettings()
        self.sources: SourcesLink | None = None
        self.answer_settings = AnswerSettings()
        self.crew_settings = CrewSettings()
        self.analysis_settings = AnalysisSettings()
        self.providers = ProviderSettings()
        self.router = router or Router.from_settings(self.providers)
        self.transcriber: WhisperTranscriber | None = None
        self.speech_task: asyncio.Task | None = None
        self.spacy_task: asyncio.Future | None = None
        self.parsers_task: asyncio.Future | None = None
        self.graph: GraphLink | None = None
        self.servicer: RagServicer | None = None
        self.runtime: RagRuntime | None = None
        self.resume_task: asyncio.Task | None = None
        self.warmer: SentenceWarmer | None = None

    async def start(self) -> None:
        model: TextEmbedder
        if self._embedder is not None:
            model = self._embedder
        else:
            from services.models.embedder import get_embedder

            model = await asyncio.to_thread(get_embedder)
        graph_sync = self._graph_sync
        if graph_sync is None and self._graph_feed is not None:
            self.graph = await asyncio.to_thread(
                GraphLink.open, metadata_path(self.settings.data_dir), self._graph_feed, self.graph_settings,
                self.storage)
            graph_sync = self.graph.port
        self.transcriber, audio = build_speech(self.speech, self.settings.max_upload_bytes)
        self.runtime = runtime = await asyncio.to_thread(
            functools.partial(RagRuntime.open, self.settings.data_dir, self.rag, self.settings.max_upload_bytes, model,
                              graph_sync, audio, storage=self.storage)
        )
        sentence_cache = CachedEncoder(model)
        # Retrieval reads live chunks, and an earlier version's when document_ids names one ("<id>@<n>").
        answers, agents = build_answering(VersionedIndex(runtime.index, runtime.metadata),
                                          VersionedLookup(runtime.metadata), model, self.answer_settings,
                                          self.router, related_documents=graph_related(GraphClient(self.channels)),
                                          sentence_cache=sentence_cache)
        # The warm-up is background work: it yields to ingestion and to questions being answered.
        self.warmer = SentenceWarmer(sentence_cache, busy=lambda: runtime.pipeline.busy or answers.busy,
                                     analyse=spans.warm)
        self.spacy_task = asyncio.ensure_future(asyncio.to_thread(spans.warm, ()))  # spaCy's first load, off the first question
        if runtime.pipeline.parsers is not None:  # parser workers started ahead of the first upload
            self.parsers_task = asyncio.ensure_future(asyncio.to_thread(runtime.pipeline.parsers.warm))
        runtime.pipeline.on_indexed = self.warmer.notify
        spoken = SpokenQuestions(answers, self.transcriber, self.speech.max_question_seconds)
        self.speech_task = asyncio.get_running_loop().create_task(warm_up(self.transcriber))
        inputs, crew, analysis = build_analysis(runtime.pipeline, runtime.catalog, answers, self.channels,
                                                self.router, self.providers, self.crew_settings,
                                                self.analysis_settings)
        self.sources = await asyncio.to_thread(SourcesLink.open, self.settings.data_dir, self.storage,
                                               self.sources_settings, runtime.pipeline, runtime.catalog)
        versions = VersionCatalog(runtime.catalog, runtime.metadata, runtime.blobs)
        changes = ChangeQuestions(versions, runtime.metadata, search=lambda tenant, question, k, ids:
                                  answers.retriever.search(tenant, question, k, ids))
        self.servicer = RagServicer(
            self.settings.max_upload_bytes, pipeline=runtime.pipeline, catalog=runtime.catalog,
            answers=answers, agents=agents, spoken=spoken, inputs=inputs, crew=crew, analysis=analysis,
            versions=versions, changes=changes, sources=self.sources.service, locator=span_locator(self.rag))
        self.resume_task = asyncio.get_running_loop().create_task(
            runtime.pipeline.sweep_forever(self.rag.sweep_interval_s, enabled=self.rag.resume_on_startup),
            name="ingest-sweep",
        )
        if self.graph is not None:
            await self.graph.start(runtime.metadata, runtime.pipeline.locks)
        self.sources.start()

    async def stop(self) -> None:
        if self.sources is not None:
            await self.sources.stop()  # first: a sync uploads through the pipeline
        if self.resume_task is not None:
            self.resume_task.cancel()
            await asyncio.gather(self.resume_task, return_exceptions=True)
        if self.servicer is not None:
            await self.servicer.analysis.close()
        if self.warmer is not None:
            await self.warmer.close()
        for task in (self.speech_task, self.spacy_task, self.parsers_task):
            if task is not None:
                await asyncio.gather(task, return_exceptions=True)
        if self.graph is not None:
            await self.graph.stop()  # before the stores close: the worker reads them
        if self.runtime is not None:
            await self.runtime.close()
            self.runtime = None
        if self.sources is not None:
            self.sources.close()
            self.sources = None
        if self.graph is not None:
            self.graph.close()
            self.graph = None
        if self.transcriber is not None:
            self.transcriber.close()
            self.transcriber = None

    def _register(self, server: grpc.aio.Server) -> None:
        assert self.servicer is not None, "registered after on_start (runtime.server.create_server)"
        rag_service_pb2_grpc.add_RagServiceServicer_to_server(self.servicer, server)

    def binding(self) -> ServiceBinding:
        return ServiceBinding(
            name="rag",
            full_names=[FULL_NAME],
            register=self._register,
            on_start=self.start,
            on_stop=self.stop,
            channels=self.channels,
        )


def binding(settings: MeshSettings) -> ServiceBinding:
    graph = GraphSyncSettings()
    channels = ChannelPool(settings)
    return RagService(settings, graph_feed=mesh_feed(channels, graph), graph_settings=graph,
                      channels=channels).binding()
