"""Evidence for a question: a wider fused pool, reordered by what its sentences say.

Fusion ranks whole chunks by BM25 and MiniLM scores of the chunk; the answer, though, is one
sentence. The answer path therefore retrieves a wider pool (``POOL_SIZE`` chunks), scores every
sentence of it with the answer engine's sentence model, and reorders the chunks with a small
logistic regression over the chunk's fused rank and scores and its best sentence's evidence
(coefficients in ``answer_model.CHUNK``, fitted by ``bench.calibrate_abstention``). Measured on
SQuAD 2.0 (article-level cross-validation), gold answer inside the top 5 chunks: 0.928 fused
order, 0.955 reordered. Plain search (``/v1/search``) keeps the fused order: this reorders for
questions, and SciFact's claims were never measured with it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from services.rag.answers import answer_model
from services.rag.answers.extractive import ExtractiveAnswerer
from services.rag.answers.features import FEATURE_NAMES
from services.rag.answers.scoring import LinearModel
from services.rag.retrieval import RetrievedChunk

POOL_SIZE = 20
"""Fused chunks considered before reordering (the gold chunk is in the top 20 for 98.8% of SQuAD)."""

CHUNK_FEATURE_NAMES: tuple[str, ...] = ("reciprocal_rank", "relative_score", "dense_score", "keyword_score",
                                        "best_sentence_decision", "best_cosine", "best_idf_coverage_window",
                                        "idf_coverage_chunk")
_NO_SENTENCE = -10.0
"""Sentence decision of a chunk with no candidate of its own (all its sentences repeated elsewhere)."""


def pool_size(top_k: int) -> int:
    return max(POOL_SIZE, top_k)


def chunk_features(pool: Sequence[RetrievedChunk], chunk_of: Sequence[int], matrix: np.ndarray,
                   decisions: np.ndarray) -> np.ndarray:
    """One ``CHUNK_FEATURE_NAMES`` row per pooled chunk; ``chunk_of[i]`` is candidate i's chunk."""
    cosine, window, chunk = (FEATURE_NAMES.index(n) for n in ("cosine", "idf_coverage_window", "idf_coverage_chunk"))
    top = max(max(h.score for h in pool), 1e-9)
    rows = np.zeros((len(pool), len(CHUNK_FEATURE_NAMES)))
    owner = np.asarray(chunk_of)
    for r, hit in enumerate(pool):
        rows[r, :4] = (1.0 / (1 + r), hit.score / top, hit.dense_score, hit.keyword_score)
        mine = np.flatnonzero(owner == r) if len(owner) else owner
        if len(mine):
            rows[r, 4:] = (decisions[mine].max(), matrix[mine, cosine].max(), matrix[mine, window].max(),
                           matrix[mine, chunk].max())
        else:
            rows[r, 4] = _NO_SENTENCE
    return rows


class EvidenceRanker:
    """Reorders a fused pool by its sentences' evidence (the retrieval ``Reranker`` shape)."""

    def __init__(self, engine: ExtractiveAnswerer, model: LinearModel | None = None) -> None:
        self._engine = engine
        coef, intercept = answer_model.CHUNK
        self.model = model or LinearModel(tuple(coef), intercept)
        if len(self.model.coef) != len(CHUNK_FEATURE_NAMES):
            raise ValueError("chunk model does not match the feature set; refit with bench.calibrate_abstention")

    def features(self, question: str, pool: Sequence[RetrievedChunk]) -> np.ndarray:
        found, matrix = self._engine.features(question, pool)
        by_id = {h.chunk.chunk_id: r for r, h in enumerate(pool)}
        chunk_of = [by_id[hit.chunk.chunk_id] for hit, _, _ in found]
        decisions = self._engine.scorer.sentence_decisions(matrix) if len(matrix) else np.zeros(0)
        return chunk_features(pool, chunk_of, matrix, decisions)

    def rerank(self, query: str, candidates: Sequence[RetrievedChunk]) -> list[RetrievedChunk]:
        if len(candidates) < 2:
            return list(candidates)
        scores = self.model.decision(self.features(query, candidates))
        return [candidates[i] for i in np.argsort(-scores, kind="stable")]
