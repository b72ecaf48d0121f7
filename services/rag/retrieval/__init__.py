"""Hybrid retrieval over the tenant's chunks: BM25 + dense, fused, reranked, graph-expanded."""

from services.rag.retrieval.config import FusionMethod, RetrievalConfig
from services.rag.retrieval.fusion import Normalisation, ScoreFusionConfig
from services.rag.retrieval.hybrid import HybridRetriever, NoopReranker, Reranker, RetrievedChunk
from services.rag.retrieval.ports import ChunkIndex, QueryEncoder, RelatedDocuments

__all__ = [
    "ChunkIndex",
    "FusionMethod",
    "HybridRetriever",
    "NoopReranker",
    "Normalisation",
    "QueryEncoder",
    "RelatedDocuments",
    "Reranker",
    "RetrievalConfig",
    "RetrievedChunk",
    "ScoreFusionConfig",
]
