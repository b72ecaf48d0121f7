"""The chunk index: what retrieval reads and what ingestion writes, strictly per tenant.

Reads (for hybrid retrieval and grounded answers):
- ``dense_search(tenant, query_vector, k, document_ids=None)`` -> [(chunk_id, cosine)]
- ``keyword_search(tenant, query, k, document_ids=None)`` -> [(chunk_id, bm25)]
- ``get_chunks(tenant, ids)`` -> [Chunk] with text and full provenance, in the order asked
All are synchronous and thread-safe (call them through ``asyncio.to_thread``), and return
only chunks of the tenant's READY documents.

Writes (ingestion): ``stage_vectors`` (invisible), then ``publish`` (the SQLite commit that
makes a document visible), or ``discard`` to undo a failed attempt; ``remove_document``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from services.rag.documents import Chunk, DocumentRecord, GraphSyncState, Section, vector_key
from services.rag.store.keyword import KeywordIndex
from services.rag.store.metadata import MetadataStore
from services.rag.store.vectors import VectorStore

if TYPE_CHECKING:  # chromadb is imported only where that backend is chosen
    from services.rag.store.chroma_vectors import ChromaVectors


class ChunkIndex:
    def __init__(self, metadata: MetadataStore, vectors: VectorStore | ChromaVectors, keyword: KeywordIndex) -> None:
        self.metadata = metadata
        self.vectors = vectors
        self.keyword = keyword

    # -- reads -----------------------------------------------------------------------
    def dense_search(
        self, tenant: str, query_vector: np.ndarray, k: int, document_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        allowed = None
        if document_ids is not None:
            allowed = [vector_key(c) for c in self.metadata.visible_chunk_ids(tenant, document_ids)]
            if not allowed:
                return []
        # The vector store may hold vectors not visible yet (an ingest in flight): fetch more until k survive.
        fetch = k + 8
        while True:
            hits = self.vectors.search(tenant, query_vector, fetch, allowed)
            visible = self.metadata.visible_ids_for_keys(tenant, [key for key, _ in hits])
            results = [(visible[key], score) for key, score in hits if key in visible]
            if len(results) >= k or len(hits) < fetch:
                return results[:k]
            fetch *= 2

    def keyword_search(
        self, tenant: str, query: str, k: int, document_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        allowed = None
        if document_ids is not None:
            allowed = set(self.metadata.visible_chunk_ids(tenant, document_ids))
            if not allowed:
                return []
        return self.keyword.search(tenant, query, k, allowed)

    def get_chunks(self, tenant: str, ids: Sequence[str]) -> list[Chunk]:
        return self.metadata.get_chunks(tenant, ids)

    def document_chunks(self, tenant: str, document_id: str) -> list[Chunk]:
        return self.metadata.document_chunks(tenant, document_id)

    # -- writes ----------------------------------------------------------------------
    def stage_vectors(self, tenant: str, document_id: str, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Writes vectors to the vector store; they stay invisible until ``publish``."""
        self.vectors.add(tenant, document_id, [c.chunk_id for c in chunks], vectors)

    def publish(
        self, record: DocumentRecord, sections: Sequence[Section], chunks: Sequence[Chunk], graph_sync: GraphSyncState
    ) -> None:
        vanished = self.metadata.publish(record, sections, chunks, graph_sync)
        self.vectors.remove(record.tenant, vanished)

    def discard(self, tenant: str, document_id: str, staged_ids: Sequence[str]) -> None:
        """Undoes a failed ingest: the document's chunk rows and every vector it wrote or had."""
        old = self.metadata.clear_chunks(tenant, document_id)
        self.vectors.remove(tenant, sorted(set(old) | set(staged_ids)))

    def remove_document(self, tenant: str, document_id: str) -> int:
        """Deletes the document and its chunks from SQLite (visible at once), then from the vectors."""
        ids = self.metadata.delete_document(tenant, document_id)
        # The vector log may also hold vectors of an attempt that never reached SQLite; remove those too.
        stray = self.vectors.stored_ids(tenant, document_id)
        self.vectors.remove(tenant, sorted(set(ids) | set(stray)))
        return len(ids)
