"""The storage ports: what the rest of the RAG service may call on a store, whichever backend holds it.

Two backends implement every role: the embedded one (``MetadataStore``, ``VectorStore``, ``KeywordIndex``,
``ChunkIndex``, ``BlobStore``) and PostgreSQL (``PostgresMetadataStore``, ``PostgresVectors``,
``Bm25Keywords``/``FullTextKeywords``, ``PostgresChunkIndex``, ``PostgresBlobStore``); the vectors have a third,
a Chroma server (``ChromaVectors``, beside the embedded metadata store). The runtime, the
pipeline, the catalogs and the re-index path are typed against these Protocols, so mypy proves both
backends fit them; ``tests/rag/test_store_ports.py`` checks each pair's names and parameters as well. A
method missing from one backend (``PostgresVectors.flush`` once was) then fails the lint and a unit test,
rather than a replica at shutdown.

Each Protocol holds only what code outside ``services.rag.store`` calls. What one backend's own wiring
calls (the embedded ``rebuild``, ``release_all_leases``, ``load``; PostgreSQL's ``exclusive``,
``recorded_identity``) stays on its class, typed there: a port is not the union of both classes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from services.rag.documents import Chunk, DocumentRecord, GraphSyncState, Section
from services.rag.versions.model import DocumentVersion, StoredVector


class DocumentRows(Protocol):
    """Documents, their sections and chunk rows. Reads see only READY documents' chunks, so a caller never
    sees an ingest half done, on either backend."""

    def upsert_document(self, record: DocumentRecord) -> bool: ...

    def update_document(self, document_id: str, **fields: Any) -> None: ...

    def get_document(self, tenant: str, document_id: str) -> DocumentRecord | None: ...

    def list_documents(self, tenant: str, limit: int, after: tuple[float, str] | None = None
                       ) -> list[DocumentRecord]: ...

    def count_documents(self, tenant: str) -> int: ...

    def count_chunks(self, tenant: str) -> int: ...

    def sections(self, document_id: str) -> list[Section]: ...

    def document_chunks(self, tenant: str, document_id: str) -> list[Chunk]: ...

    def tenants(self) -> list[str]: ...

    def close(self) -> None: ...


class IngestLeases(Protocol):
    """The ingestion lease (``store.leases``): only the replica holding a document's lease moves its status,
    so two replicas never ingest one document. ``False``/``None`` answers mean the lease is not this one's."""

    def claim_document(self, tenant: str, document_id: str) -> bool: ...

    def claim_unfinished(self) -> DocumentRecord | None: ...

    def begin_parse(self, tenant: str, document_id: str) -> int | None: ...

    def parse_attempts(self, tenant: str, document_id: str) -> int: ...

    def renew_lease(self, tenant: str, document_id: str) -> bool: ...

    def release_lease(self, tenant: str, document_id: str) -> None: ...

    def update_claimed(self, tenant: str, document_id: str, **fields: Any) -> bool: ...


class VersionRows(Protocol):
    """Earlier versions of a document (``services.rag.versions``): archived with their chunks and vectors, so
    a version can be searched, compared and re-embedded without the live store holding it."""

    def claim_version(self, record: DocumentRecord) -> DocumentRecord | None: ...

    def promote(self, staging: DocumentRecord, sections: Sequence[Section], chunks: Sequence[Chunk],
                graph_sync: GraphSyncState, live_vectors: Mapping[str, np.ndarray | None],
                staged_vectors: Mapping[str, np.ndarray | None], embedded: int, reused: int
                ) -> tuple[list[str], DocumentRecord]: ...

    def versions(self, tenant: str, document_id: str) -> list[DocumentVersion]: ...

    def version_sections(self, tenant: str, document_id: str, version: int) -> list[Section]: ...

    def archived_chunks(self, tenant: str, document_id: str, version: int) -> list[Chunk]: ...

    def archived_chunks_by_id(self, tenant: str, chunk_ids: Sequence[str]) -> list[Chunk]: ...

    def archived_vectors(self, tenant: str, document_id: str, version: int | None = None) -> list[StoredVector]: ...

    def live_chunk_texts(self, tenant: str, document_id: str) -> list[tuple[str, str]]: ...

    def version_shas(self, tenant: str, document_id: str) -> set[str]: ...

    def content_in_use(self, tenant: str, content_sha256: str) -> bool: ...

    def versioned_documents(self, tenant: str, limit: int = 200) -> list[DocumentRecord]: ...

    def archive_tenants(self) -> list[str]: ...

    def archived_texts(self, tenant: str) -> list[tuple[str, str]]: ...

    def set_archived_vectors(self, tenant: str, chunk_ids: Sequence[str], vectors: np.ndarray) -> None: ...


class MetadataPort(DocumentRows, IngestLeases, VersionRows, Protocol):
    """The metadata store: the commit point of ingestion (a document's chunk rows and its READY status land
    together), shared by the pipeline, the catalogs, the re-index path and the graph-sync worker."""


class VectorsPort(Protocol):
    """The vectors of one embedding model (``collection``). Searches go through ``ChunkIndexPort``, which
    joins them with READY chunk rows; here is only what re-embedding, version reuse and shutdown need."""

    @property
    def collection(self) -> str: ...

    def add(self, tenant: str, document_id: str, chunk_ids: Sequence[str], vectors: np.ndarray) -> None: ...

    def remove(self, tenant: str, chunk_ids: Sequence[str]) -> None: ...

    def vectors_of(self, tenant: str, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]: ...

    def mark_complete(self) -> None:
        """Stamps the store as wholly this embedder's: a re-index cut short before it is redone."""
        ...

    def flush(self) -> None:
        """Called once at shutdown: what the store has not made durable yet, it must now."""
        ...


class KeywordPort(Protocol):
    """The keyword index as the service drives it: rebuilt in the background after a change, so the first
    search after one rarely waits (a search never depends on it: a stale index is rebuilt or always current)."""

    def refresh(self, tenant: str) -> bool: ...


class ChunkIndexPort(Protocol):
    """The facade retrieval reads and ingestion writes (``retrieval.ports.ChunkIndex`` is its read side):
    staged vectors stay invisible until ``publish``, and ``discard`` undoes a failed attempt."""

    @property
    def metadata(self) -> MetadataPort: ...

    @property
    def vectors(self) -> VectorsPort: ...

    @property
    def keyword(self) -> KeywordPort: ...

    def dense_search(self, tenant: str, query_vector: np.ndarray, k: int, document_ids: Sequence[str] | None = None
                     ) -> list[tuple[str, float]]: ...

    def keyword_search(self, tenant: str, query: str, k: int, document_ids: Sequence[str] | None = None
                       ) -> list[tuple[str, float]]: ...

    def get_chunks(self, tenant: str, ids: Sequence[str]) -> list[Chunk]: ...

    def document_chunks(self, tenant: str, document_id: str) -> list[Chunk]: ...

    def stage_vectors(self, tenant: str, document_id: str, chunks: Sequence[Chunk], vectors: np.ndarray) -> None: ...

    def publish(self, record: DocumentRecord, sections: Sequence[Section], chunks: Sequence[Chunk],
                graph_sync: GraphSyncState) -> None: ...

    def discard(self, tenant: str, document_id: str, staged_ids: Sequence[str]) -> None: ...

    def remove_document(self, tenant: str, document_id: str) -> int: ...


class BlobPort(Protocol):
    """The original bytes of every upload by tenant and content hash, whole or absent: a re-index re-parses the
    exact upload, and a replica that takes over an ingestion reads it back."""

    def put(self, tenant: str, content_sha256: str, data: bytes) -> None: ...

    def get(self, tenant: str, content_sha256: str) -> bytes | None: ...

    def delete(self, tenant: str, content_sha256: str) -> None: ...
