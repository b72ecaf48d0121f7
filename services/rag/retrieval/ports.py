"""What retrieval needs from the rest of the RAG service: a tenant-scoped chunk index and an encoder.

The ingestion side (``services.rag.store``) implements ``ChunkIndex``; the embedder of
``services.models.embedder`` is a ``QueryEncoder``. Retrieval depends on these two shapes only,
so unit tests can drive it with small fakes and the benchmark with the production index.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

import numpy as np

from services.rag.documents import Chunk

Hit = tuple[str, float]
"""A chunk id and the retriever's score for it (higher is better)."""


class ChunkIndex(Protocol):
    """The dense and keyword indexes and the chunk store of one service, always scoped to a tenant."""

    def dense_search(
        self, tenant: str, query_vector: np.ndarray, k: int, document_ids: Sequence[str] | None = None
    ) -> list[Hit]:
        """Chunks nearest to an L2-normalised query vector (cosine similarity), best first."""
        ...

    def keyword_search(self, tenant: str, query: str, k: int, document_ids: Sequence[str] | None = None) -> list[Hit]:
        """Chunks by BM25 score for the query text, best first."""
        ...

    def get_chunks(self, tenant: str, ids: Sequence[str]) -> list[Chunk]:
        """The chunks with these ids that belong to the tenant (others are silently absent)."""
        ...

    def document_chunks(self, tenant: str, document_id: str) -> list[Chunk]:
        """Every chunk of one of the tenant's documents, in document order (summaries, whole tables)."""
        ...


class QueryEncoder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text."""
        ...


RelatedDocuments = Callable[[str, str, int], Awaitable[Sequence[str]]]
"""``related(tenant, document_id, limit)``: ids of the tenant's documents linked to one of its documents in the
knowledge graph."""
