"""Hybrid retrieval: keyword (BM25) and dense (MiniLM) candidates, fused, reranked, tenant-scoped.

The pipeline for one query:
1. each retriever returns ``max(top_k * candidate_factor, min_candidates)`` candidates from
   the caller's tenant only (optionally restricted to some documents);
2. the candidates are fused (RRF or normalised score fusion, see ``fusion``);
3. a ``Reranker`` may reorder the fused pool (no-op by default: no cross-encoder is available
   offline here); the pool is cut to ``top_k``;
4. optionally, chunks of documents related to the best hits in the knowledge graph are appended.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from services.rag.documents import Chunk
from services.rag.retrieval.config import FusionMethod, RetrievalConfig
from services.rag.retrieval.fusion import Fused, reciprocal_rank_fusion, score_fusion
from services.rag.retrieval.ports import ChunkIndex, QueryEncoder, RelatedDocuments
from services.runtime import domain_metrics, tracing

DENSE = "dense"
KEYWORD = "keyword"


@dataclass(frozen=True)
class RetrievedChunk:
    """A chunk with its fused score and each retriever's raw score (0 when it did not return it)."""

    chunk: Chunk
    score: float
    dense_score: float = 0.0
    keyword_score: float = 0.0
    via_graph: bool = False
    """Added by knowledge-graph expansion rather than matched by the query directly."""


class Reranker(Protocol):
    """Reorders (and may drop) fused candidates; sees the whole pool before it is cut to top_k."""

    def rerank(self, query: str, candidates: Sequence[RetrievedChunk]) -> Sequence[RetrievedChunk]: ...


class NoopReranker:
    """Keeps the fused order."""

    def rerank(self, query: str, candidates: Sequence[RetrievedChunk]) -> Sequence[RetrievedChunk]:
        return list(candidates)


class HybridRetriever:
    def __init__(
        self,
        index: ChunkIndex,
        encoder: QueryEncoder,
        config: RetrievalConfig | None = None,
        reranker: Reranker | None = None,
        related_documents: RelatedDocuments | None = None,
    ) -> None:
        self._index = index
        self._encoder = encoder
        self.config = config or RetrievalConfig()
        self._reranker = reranker or NoopReranker()
        self._related = related_documents

    def retrieve(
        self,
        tenant: str,
        query: str,
        top_k: int | None = None,
        document_ids: Sequence[str] | None = None,
        fusion: FusionMethod | None = None,
    ) -> list[RetrievedChunk]:
        """Blocking retrieval (index and model calls); use ``search`` from async code."""
        top_k = top_k or self.config.default_top_k
        fusion = fusion or self.config.default_fusion
        depth = max(top_k * self.config.candidate_factor, self.config.min_candidates)
        ids = list(document_ids) if document_ids else None
        rankings = {}
        if fusion is not FusionMethod.KEYWORD_ONLY:
            vector = self._encoder.encode([query])[0]
            rankings[DENSE] = self._index.dense_search(tenant, vector, depth, ids)
        if fusion is not FusionMethod.DENSE_ONLY:
            rankings[KEYWORD] = self._index.keyword_search(tenant, query, depth, ids)
        fused = self._fuse(rankings, fusion)
        pool = self._materialise(tenant, fused)
        return list(self._reranker.rerank(query, pool))[:top_k]

    async def search(
        self,
        tenant: str,
        query: str,
        top_k: int | None = None,
        document_ids: Sequence[str] | None = None,
        fusion: FusionMethod | None = None,
        expand_with_graph: bool = False,
    ) -> list[RetrievedChunk]:
        started = time.perf_counter()
        with tracing.stage("rag.retrieve", **{"docuthinker.top_k": top_k, "docuthinker.graph": expand_with_graph}):
            hits = await asyncio.to_thread(self.retrieve, tenant, query, top_k, document_ids, fusion)
            if expand_with_graph and self._related is not None and hits:
                hits += await self._graph_neighbours(tenant, query, hits, fusion)
        domain_metrics.RETRIEVAL_SECONDS.observe(time.perf_counter() - started)
        return hits

    def _fuse(self, rankings: dict, fusion: FusionMethod) -> list[Fused]:
        if fusion is FusionMethod.RRF:
            return reciprocal_rank_fusion(rankings, self.config.rrf_k)
        weights = {DENSE: self.config.score_fusion.dense_weight, KEYWORD: 1.0 - self.config.score_fusion.dense_weight}
        if fusion is not FusionMethod.SCORE:
            weights = {name: 1.0 for name in rankings}
        return score_fusion(rankings, weights, self.config.score_fusion.normalisation)

    def _materialise(self, tenant: str, fused: list[Fused]) -> list[RetrievedChunk]:
        chunks = {c.chunk_id: c for c in self._index.get_chunks(tenant, [f.id for f in fused])}
        # The index scopes by tenant already; dropping ids the store does not return for this
        # tenant is the second lock on the door, not the first.
        return [
            RetrievedChunk(
                chunk=chunks[f.id],
                score=f.score,
                dense_score=f.component_scores.get(DENSE, 0.0),
                keyword_score=f.component_scores.get(KEYWORD, 0.0),
            )
            for f in fused
            if f.id in chunks and chunks[f.id].tenant == tenant
        ]

    async def _graph_neighbours(
        self, tenant: str, query: str, hits: list[RetrievedChunk], fusion: FusionMethod | None
    ) -> list[RetrievedChunk]:
        assert self._related is not None
        seen_docs = list(dict.fromkeys(h.chunk.document_id for h in hits))
        related: list[str] = []
        for doc in seen_docs[: self.config.graph_seed_documents]:
            for other in await self._related(tenant, doc, self.config.graph_related_limit):
                if other not in seen_docs and other not in related:
                    related.append(other)
        if not related:
            return []
        extra = await asyncio.to_thread(
            self.retrieve, tenant, query, self.config.graph_extra_chunks, related, fusion
        )
        known = {h.chunk.chunk_id for h in hits}
        return [replace(h, via_graph=True) for h in extra if h.chunk.chunk_id not in known]
