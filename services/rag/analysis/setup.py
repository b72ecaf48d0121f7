"""Builds the crew and the analysis pipeline from the RAG service's parts (NLP over the service's pool)."""

from __future__ import annotations

from collections.abc import Sequence

from services.clients.nlp import NlpClient
from services.providers.router import Router
from services.providers.settings import ProviderSettings
from services.rag.analysis.answers import RagAnswers
from services.rag.analysis.nlp import NlpPort
from services.rag.analysis.pipeline import AnalysisPipeline
from services.rag.analysis.settings import AnalysisSettings
from services.rag.answers.answering import AnswerService
from services.rag.catalog import DocumentCatalog
from services.rag.crew import CrewRunner, CrewSettings, DocumentInputs
from services.rag.ingest.pipeline import IngestionPipeline
from services.rag.retrieval import RetrievedChunk
from services.runtime import ChannelPool


class _Retrieval:
    """``EvidenceSearch`` over the answer service's validated, tenant-scoped search."""

    def __init__(self, answers: AnswerService) -> None:
        self._answers = answers

    async def search(self, tenant: str, query: str, top_k: int, document_ids: Sequence[str]) -> list[RetrievedChunk]:
        return await self._answers.search(tenant, query, top_k, document_ids)


def build_analysis(
    pipeline: IngestionPipeline,
    catalog: DocumentCatalog,
    answers: AnswerService,
    channels: ChannelPool,
    router: Router,
    providers: ProviderSettings,
    crew_settings: CrewSettings,
    settings: AnalysisSettings,
    nlp: NlpPort | None = None,
) -> tuple[DocumentInputs, CrewRunner, AnalysisPipeline]:
    nlp = nlp or NlpClient(channels)
    inputs = DocumentInputs(pipeline, catalog)
    crew = CrewRunner(_Retrieval(answers), nlp, inputs.text, crew_settings,
                      router=lambda: router, providers=lambda: providers)
    analysis = AnalysisPipeline(inputs, catalog, nlp, RagAnswers(answers), crew, settings,
                                max_question_chars=answers.retriever.config.max_question_chars)
    return inputs, crew, analysis
