"""Durable state of the RAG service, all under one data directory.

- ``metadata``: SQLite (WAL) documents, sections and chunk rows; the commit point of ingestion.
- ``blobs``: the original bytes of every document, by content hash (reindex, crash resume).
- ``vectors``: a SQLite vector log (durable, ``vector_log``) plus per-tenant FAISS indexes rebuilt from it (fast search).
- ``chroma_vectors``: the same vectors on a Chroma server instead, when ``DOCUTHINKER_RAG_VECTOR_BACKEND=chroma``.
- ``keyword``: persisted per-tenant BM25 indexes (bm25s), rebuilt from SQLite when chunks change.
- ``chunk_index``: the read/write facade retrieval builds on (dense, keyword, get_chunks).
- ``ports``: what the rest of the service may call on each of these, which the PostgreSQL classes (``pg_*``) fit too.
"""

from services.rag.store.blobs import BlobStore
from services.rag.store.chunk_index import ChunkIndex
from services.rag.store.keyword import KeywordIndex
from services.rag.store.metadata import MetadataStore
from services.rag.store.vectors import VectorStore

__all__ = ["BlobStore", "ChunkIndex", "KeywordIndex", "MetadataStore", "VectorStore"]
