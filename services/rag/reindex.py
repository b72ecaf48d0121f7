"""The re-index path for a changed embedder: vectors of two models never share an index.

The vector store (the embedded log, a Chroma server's stamp collection, or the shared PostgreSQL
collection) records the embedder's
identity. A start with another one fails with a clear message, unless
``DOCUTHINKER_RAG_REINDEX_ON_MODEL_CHANGE`` is on: then every vector is dropped and each READY
document's chunks are embedded again from their stored text, before SERVING. The store is stamped
with the new identity only once every chunk is in, so a re-index cut short is redone (or refused).
"""

from __future__ import annotations

import logging
import pathlib
from typing import TYPE_CHECKING

import numpy as np

from services.rag.ingest.embedding import TextEmbedder
from services.rag.settings import RagSettings
from services.rag.store import VectorStore
from services.rag.store.ann import HnswParams
from services.rag.store.ports import MetadataPort, VectorsPort
from services.rag.store.vectors import EmbedderMismatchError

if TYPE_CHECKING:  # the PostgreSQL and Chroma backends are imported only where chosen
    from services.rag.store.chroma_vectors import ChromaVectors
    from services.rag.store.pg_index import PostgresVectors
    from services.rag.store.pg_metadata import PostgresMetadataStore

log = logging.getLogger("docuthinker.rag.reindex")


def embedder_identity(embedder: TextEmbedder) -> str:
    return str(getattr(embedder, "identity", embedder.name))


def legacy_identity(embedder: TextEmbedder) -> str | None:
    """Indexes written before identities were recorded hold PyTorch (fp32) vectors of the real model."""
    if not hasattr(embedder, "identity"):
        return None
    from services.models.embedder import identity

    return identity("torch")


def open_vectors(root: pathlib.Path, settings: RagSettings, embedder: TextEmbedder
                 ) -> tuple[VectorStore | ChromaVectors, bool]:
    """The vector store for ``embedder`` (``settings.vector_backend``); True when it was emptied for a re-index."""
    def store(check_identity: bool = True) -> VectorStore | ChromaVectors:
        hnsw = HnswParams(settings.hnsw_m, settings.hnsw_ef_construction, settings.hnsw_ef_search)
        if settings.vector_backend == "chroma":
            from services.rag.store.chroma_vectors import ChromaVectors

            return ChromaVectors(settings.chroma_url, embedder.name, embedder.dimension,
                                 identity=embedder_identity(embedder), hnsw=hnsw, check_identity=check_identity,
                                 prefix=settings.chroma_prefix)
        return VectorStore(
            root / "chroma", embedder.name, embedder.dimension, settings.faiss_threads,
            identity=embedder_identity(embedder), hnsw_threshold=settings.hnsw_threshold,
            hnsw=hnsw, snapshot_dir=root / "ann", legacy_identity=legacy_identity(embedder),
            check_identity=check_identity)

    try:
        return store(), False
    except EmbedderMismatchError as exc:
        if not settings.reindex_on_model_change:
            raise
        log.warning("embedder changed: re-indexing every chunk", extra={"fields": {"reason": str(exc)}})
    vectors = store(check_identity=False)
    vectors.reset()
    return vectors, True


def reindex_shared(vectors: PostgresVectors, metadata: PostgresMetadataStore, settings: RagSettings,
                   embedder: TextEmbedder) -> bool:
    """Checks the shared collection's embedder and, if asked, re-embeds it; True when it re-indexed.

    One replica at a time: another starting meanwhile waits here, then finds the collection done, so
    no replica serves (or re-indexes) a half-embedded collection. Replicas still running the old
    embedder are not stopped by this: switch every replica together.
    """
    with vectors.exclusive():
        recorded = vectors.recorded_identity(legacy_identity(embedder))
        if recorded == vectors.identity:
            return False
        if not settings.reindex_on_model_change:
            raise EmbedderMismatchError(recorded, vectors.identity)
        log.warning("embedder changed: re-indexing every chunk",
                    extra={"fields": {"reason": str(EmbedderMismatchError(recorded, vectors.identity))}})
        vectors.reset()
        reembed_all(metadata, vectors, embedder)
        return True


def reembed_all(metadata: MetadataPort, vectors: VectorsPort, embedder: TextEmbedder) -> int:
    """Embeds every READY chunk again into the (emptied) store, then stamps it complete; returns the
    number of chunks."""
    total = 0
    for tenant in metadata.tenants():
        after = None
        while True:
            documents = metadata.list_documents(tenant, 200, after)
            if not documents:
                break
            after = (documents[-1].create_time, documents[-1].document_id)
            for record in documents:
                chunks = metadata.document_chunks(tenant, record.document_id)
                if not chunks:
                    continue
                vectors_ = np.asarray(embedder.encode([c.text for c in chunks]), dtype=np.float32)
                vectors.add(tenant, record.document_id, [c.chunk_id for c in chunks], vectors_)
                total += len(chunks)
    total += _reembed_archive(metadata, embedder)
    vectors.mark_complete()
    log.info("re-index done", extra={"fields": {"chunks": total}})
    return total


def _reembed_archive(metadata: MetadataPort, embedder: TextEmbedder) -> int:
    """Earlier versions keep their vectors beside their chunks: embedded again too, so a search of an earlier
    version never mixes two models either."""
    total = 0
    for tenant in metadata.archive_tenants():
        rows = metadata.archived_texts(tenant)
        for start in range(0, len(rows), 512):
            batch = rows[start:start + 512]
            vectors_ = np.asarray(embedder.encode([text for _, text in batch]), dtype=np.float32)
            metadata.set_archived_vectors(tenant, [chunk_id for chunk_id, _ in batch], vectors_)
            total += len(batch)
    return total
