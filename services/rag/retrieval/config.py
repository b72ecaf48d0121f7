"""Retrieval configuration: top_k, candidate depth and the measured default fusion."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from services.rag.retrieval.fusion import RRF_K, Normalisation, ScoreFusionConfig
from services.vocabulary.limits import MAX_QUESTION_CHARS


class FusionMethod(IntEnum):
    """Values equal the ``docuthinker.rag.v1.FusionMethod`` numbers."""

    RRF = 1
    SCORE = 2
    DENSE_ONLY = 3
    KEYWORD_ONLY = 4


# Chosen by measurement (bench/quality_bench.py, SciFact train queries, production chunking and
# indexes, bench/results/). All 809 train queries over all 5,183 abstracts (12,285 chunks),
# nDCG@10 / Recall@100: BM25 0.676 / 0.918, dense 0.684 / 0.930, RRF(k=60) 0.716 / 0.957,
# score fusion with equal weights: z-score 0.729 / 0.960, min-max 0.729 / 0.958, max 0.721.
# The choice was made on a quick sample first (200 queries, 1,200 abstracts: z-score 0.788 vs
# RRF 0.773) and confirmed on the full set. Equal weights are kept on purpose: tuned weights
# did a little better on the sample (max-norm, dense 0.6: 0.791) but would be fitted to it.
DEFAULT_FUSION = FusionMethod.SCORE
DEFAULT_SCORE_FUSION = ScoreFusionConfig(dense_weight=0.5, normalisation=Normalisation.ZSCORE)


@dataclass(frozen=True)
class RetrievalConfig:
    default_top_k: int = 6
    """Chunks returned when the request leaves top_k at 0 (the seed's vector_top_k)."""
    max_top_k: int = 50
    """Largest top_k a request may ask for."""
    max_question_chars: int = MAX_QUESTION_CHARS
    """Longest question (or search query), in characters."""
    max_document_ids: int = 100
    """Most ``document_ids`` one request may restrict itself to."""
    candidate_factor: int = 2
    """Each retriever returns top_k * candidate_factor candidates before fusion (the seed's topK*2)."""
    min_candidates: int = 0
    """Floor of the per-retriever candidate depth (0: exactly top_k * candidate_factor)."""
    rrf_k: int = RRF_K
    default_fusion: FusionMethod = DEFAULT_FUSION
    score_fusion: ScoreFusionConfig = field(default_factory=lambda: DEFAULT_SCORE_FUSION)
    graph_seed_documents: int = 2
    """Best-ranked documents whose knowledge-graph neighbours are looked up."""
    graph_related_limit: int = 3
    """Related documents asked for per seed document."""
    graph_extra_chunks: int = 3
    """Chunks appended from related documents."""
