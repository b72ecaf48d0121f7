"""Builds the answering side of the RAG service from its stores: retriever, engines, agent graph."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from services.clients.graph import GraphApi
from services.providers.router import Router
from services.rag.agents.graph import AgentGraph
from services.rag.agents.planner import Planner
from services.rag.answers.answering import AnswerService, DocumentLookup
from services.rag.answers.extractive import ExtractiveAnswerer, ExtractiveConfig
from services.rag.answers.generative import GenerativeAnswerer
from services.rag.answers.settings import AnswerSettings
from services.rag.answers.support import SupportChecker
from services.rag.answers.vectors import CachedEncoder
from services.rag.retrieval import ChunkIndex, HybridRetriever, QueryEncoder, RelatedDocuments
from services.runtime.errors import DomainError

log = logging.getLogger("docuthinker.rag.answers")


def _serves(router: Router, task: str) -> bool:
    try:
        return router.can_serve(task)
    except Exception as exc:  # noqa: BLE001 - a broken provider config must not break offline answers
        log.warning("provider router unavailable; answering offline", extra={"fields": {"error": str(exc)[:200]}})
        return False


def graph_related(graph: GraphApi) -> RelatedDocuments:
    """Related documents from the graph service; best effort (a graph outage means no expansion)."""

    async def related(tenant: str, document_id: str, limit: int) -> Sequence[str]:
        try:
            return [d.document_id for d in await graph.related(document_id, limit, tenant=tenant)]
        except DomainError as exc:
            log.warning("graph expansion skipped", extra={"fields": {"document_id": document_id, "error": str(exc)}})
            return []

    return related


def build_answering(
    index: ChunkIndex,
    documents: DocumentLookup,
    encoder: QueryEncoder,
    settings: AnswerSettings,
    router: Router,
    related_documents: RelatedDocuments | None = None,
    sentence_cache: CachedEncoder | None = None,
) -> tuple[AnswerService, AgentGraph]:
    """``sentence_cache``: the sentence vectors' cache, when the caller also fills it (``sentence_warmup``)."""
    cached = sentence_cache or CachedEncoder(encoder)
    retriever = HybridRetriever(index, encoder, settings.retrieval_config(),
                                related_documents=related_documents if settings.graph_expansion else None)
    checker = SupportChecker(cached)
    extractive = ExtractiveAnswerer(cached, ExtractiveConfig(abstain_threshold=settings.abstain_threshold),
                                    document_chunks=index.document_chunks)
    generative = GenerativeAnswerer(lambda: router, checker) if settings.generative_answers else None
    answers = AnswerService(retriever, extractive, generative, documents, can_generate=lambda: _serves(router, "answer"))
    planner = Planner(lambda: router, can_generate=lambda: settings.llm_planner and _serves(router, "plan"))
    return answers, AgentGraph(answers, planner, checker)
