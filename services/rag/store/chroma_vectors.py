"""Chunk vectors on a Chroma server (``DOCUTHINKER_RAG_VECTOR_BACKEND=chroma``), for users who already run one.

The same surface as the embedded ``VectorStore`` (what ``ChunkIndex``, ``reindex`` and the runtime call), over
``chromadb.HttpClient``. The embedded store stays the default: it measured lighter
(``bench/results/chroma-memory-2026-12-03.json``, ``bench/results/chroma-server-memory-*.json``).

Layout on the server, all names under ``<prefix>-<hash of the vector set>`` (the vector set: model and dimension,
``collection_name``):

- one collection per tenant (``...-t<hash of the tenant>``). Isolation is structural rather than a metadata
  filter every query must remember: a search, a read or a delete names one tenant's collection, so no
  forgotten ``where`` can reach another tenant's vectors, and each tenant's HNSW graph holds only its own
  (as each tenant has its own FAISS index in the embedded store);
- one empty stamp collection (``...-stamp``) whose metadata records the embedder's identity, as the vector log
  does: opening the set with another embedder raises ``EmbedderMismatchError``.

Scores follow the embedded store: inner product (the ``ip`` space; Chroma's distance is ``1 - dot``, so the
score is ``1 - distance``), which is cosine on the L2-normalised vectors the embedders return. Records carry
``document_id`` and ``key`` (``vector_key``) metadata: ``ChunkIndex`` filters by FAISS keys. The collections
are created without an embedding function: every vector is given, nothing is ever downloaded.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import urllib.parse
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from services.rag.documents import vector_key
from services.rag.store.ann import HnswParams
from services.rag.store.vectors import EmbedderMismatchError, collection_name, in_progress

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

log = logging.getLogger("docuthinker.rag.vectors")

PAGE = 5_000  # ids per page when walking a collection (Chroma's get has no cursor)


class ChromaUnavailableError(RuntimeError):
    """The Chroma server named by ``DOCUTHINKER_RAG_CHROMA_URL`` did not answer at startup."""


class ChromaVectors:
    def __init__(self, url: str, model_name: str, dimension: int, identity: str | None = None,
                 hnsw: HnswParams | None = None, check_identity: bool = True, prefix: str = "docuthinker") -> None:
        import chromadb
        from chromadb.config import Settings

        self.dimension = dimension
        self.identity = identity or model_name
        self.url = url
        self._name = collection_name(model_name, dimension)
        self._hnsw = hnsw or HnswParams()
        self._prefix = f"{prefix}-{hashlib.sha256(self._name.encode()).hexdigest()[:12]}"
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"DOCUTHINKER_RAG_CHROMA_URL must be http(s)://host:port, not {url!r}")
        try:
            self._client: ClientAPI = chromadb.HttpClient(
                host=parts.hostname, port=parts.port or (443 if parts.scheme == "https" else 8000),
                ssl=parts.scheme == "https", settings=Settings(anonymized_telemetry=False))
            self._client.heartbeat()
            self._batch = self._client.get_max_batch_size()
            stamp = self._client.get_or_create_collection(
                f"{self._prefix}-stamp", metadata={"embedder": self.identity, "vector_set": self._name},
                embedding_function=None)
        except Exception as exc:  # the client raises httpx, ValueError or its own errors for a dead server
            raise ChromaUnavailableError(f"the Chroma server at {url} is unreachable: {exc}") from exc
        self._stamp = stamp
        recorded = str((stamp.metadata or {}).get("embedder", self.identity))
        if recorded != self.identity and check_identity:
            raise EmbedderMismatchError(recorded, self.identity)
        self._collections: dict[str, Collection] = {}
        self._lock = threading.Lock()

    @property
    def collection(self) -> str:
        """The name of the vector set: model and dimension, e.g. ``all-MiniLM-L6-v2-384d``."""
        return self._name

    def _tenant_name(self, tenant: str) -> str:
        return f"{self._prefix}-t{hashlib.sha256(tenant.encode()).hexdigest()[:40]}"

    def _tenant(self, tenant: str, create: bool = False) -> Collection | None:
        """The tenant's collection; None when it has none yet (reads never create one)."""
        with self._lock:
            found = self._collections.get(tenant)
        if found is not None:
            return found
        name = self._tenant_name(tenant)
        if create:
            found = self._client.get_or_create_collection(
                name, metadata={"tenant": tenant, "vector_set": self._name}, embedding_function=None,
                configuration={"hnsw": {"space": "ip", "max_neighbors": self._hnsw.m,
                                        "ef_construction": self._hnsw.ef_construction,
                                        "ef_search": self._hnsw.ef_search}})
        else:
            from chromadb.errors import NotFoundError

            try:
                found = self._client.get_collection(name, embedding_function=None)
            except NotFoundError:
                return None
        with self._lock:
            self._collections[tenant] = found
        return found

    def _tenant_collections(self) -> Iterator[Collection]:
        """Every tenant collection of this vector set (of all collections on the server, which other sets and
        deployments may share)."""
        offset = 0
        while True:
            page = self._client.list_collections(limit=100, offset=offset)
            if not page:
                return
            offset += len(page)
            for collection in page:
                if collection.name.startswith(f"{self._prefix}-t"):
                    yield collection

    def _set_stamp(self, embedder: str) -> None:
        self._stamp.modify(metadata={"embedder": embedder, "vector_set": self._name})

    def reset(self) -> None:
        """Drops every tenant's vectors; the set is stamped as mid-re-index until ``mark_complete``."""
        self._set_stamp(in_progress(self.identity))
        for collection in list(self._tenant_collections()):
            self._client.delete_collection(collection.name)
        with self._lock:
            self._collections.clear()

    def mark_complete(self) -> None:
        """Stamps the set with this store's identity: every vector in it is this embedder's."""
        self._set_stamp(self.identity)

    def flush(self) -> None:
        """Nothing to write at shutdown: the server has made each upsert and delete durable (its WAL) before
        answering it."""

    def rebuild(self, known_chunk_ids: set[str]) -> tuple[int, int]:
        """Deletes stored vectors without a chunk row (a crash between the two writes), so the stores converge as
        the embedded store's rebuild makes them. Returns (vectors kept, orphans); nothing is loaded: the server
        searches its own indexes."""
        kept = orphans = 0
        for collection in list(self._tenant_collections()):
            ids = list(self._ids(collection))
            stale = [c for c in ids if c not in known_chunk_ids]
            for start in range(0, len(stale), self._batch):
                collection.delete(ids=stale[start:start + self._batch])
            kept += len(ids) - len(stale)
            orphans += len(stale)
        if orphans:
            log.warning("removed orphan vectors", extra={"fields": {"count": orphans}})
        return kept, orphans

    def _ids(self, collection: Collection, where: dict[str, Any] | None = None) -> Iterator[str]:
        offset = 0
        while True:
            page = collection.get(where=where, limit=PAGE, offset=offset, include=[])["ids"]  # type: ignore[arg-type]
            yield from page
            if len(page) < PAGE:
                return
            offset += len(page)

    def add(self, tenant: str, document_id: str, chunk_ids: Sequence[str], vectors: np.ndarray) -> None:
        """Writes vectors into the tenant's collection; replaces same ids."""
        if not chunk_ids:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        collection = self._tenant(tenant, create=True)
        assert collection is not None
        for start in range(0, len(chunk_ids), self._batch):
            ids = list(chunk_ids[start:start + self._batch])
            collection.upsert(ids=ids, embeddings=vectors[start:start + len(ids)],
                              metadatas=[{"document_id": document_id, "key": vector_key(c)} for c in ids])

    def remove(self, tenant: str, chunk_ids: Sequence[str]) -> None:
        collection = self._tenant(tenant) if chunk_ids else None
        if collection is None:
            return
        for start in range(0, len(chunk_ids), self._batch):
            collection.delete(ids=list(chunk_ids[start:start + self._batch]))

    def search(
        self, tenant: str, vector: np.ndarray, k: int, allowed_keys: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """(FAISS key, inner product) best first, from this tenant's collection only."""
        if k <= 0 or (allowed_keys is not None and not allowed_keys):
            return []
        collection = self._tenant(tenant)
        if collection is None:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        where = None if allowed_keys is None else {"key": {"$in": [int(key) for key in allowed_keys]}}
        found = collection.query(query_embeddings=query, n_results=k, where=where,  # type: ignore[arg-type]
                                 include=["metadatas", "distances"])
        metadatas, distances = found["metadatas"], found["distances"]
        assert metadatas is not None and distances is not None
        return [(int(meta["key"]), 1.0 - float(distance))  # type: ignore[arg-type]
                for meta, distance in zip(metadatas[0], distances[0], strict=True)]

    def count(self, tenant: str) -> int:
        """Vectors held for this tenant."""
        collection = self._tenant(tenant)
        return 0 if collection is None else collection.count()

    def vectors_of(self, tenant: str, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these chunks of this tenant (ids without one are absent)."""
        collection = self._tenant(tenant) if chunk_ids else None
        found: dict[str, np.ndarray] = {}
        if collection is None:
            return found
        for start in range(0, len(chunk_ids), self._batch):
            got = collection.get(ids=list(chunk_ids[start:start + self._batch]), include=["embeddings"])
            embeddings = got["embeddings"]
            assert embeddings is not None
            found.update((cid, np.asarray(vec, dtype=np.float32)) for cid, vec in zip(got["ids"], embeddings,
                                                                                        strict=True))
        return found

    def stored_ids(self, tenant: str, document_id: str | None = None) -> list[str]:
        """Chunk ids held for this tenant (and document)."""
        collection = self._tenant(tenant)
        if collection is None:
            return []
        return sorted(self._ids(collection, None if document_id is None else {"document_id": document_id}))
