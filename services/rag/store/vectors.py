"""Chunk vectors: ChromaDB is the durable copy, per-tenant FAISS indexes serve searches.

FAISS (exact inner product on L2-normalised vectors, i.e. cosine) is rebuilt from Chroma at
startup; vectors whose chunk rows are unknown to SQLite (a crash between the two writes) are
deleted from Chroma then, so the two stores converge. FAISS ids are ``vector_key(chunk_id)``.
"""

from __future__ import annotations

import logging
import pathlib
import re
import threading
from collections.abc import Sequence

import faiss
import numpy as np

from services.rag.documents import vector_key

log = logging.getLogger("docuthinker.rag.vectors")

_CHROMA_BATCH = 1000


def collection_name(model_name: str, dimension: int) -> str:
    """Chroma collection named after the embedding model and dimension, e.g. ``all-MiniLM-L6-v2-384d``."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", f"{model_name}-{dimension}d")


class VectorStore:
    def __init__(self, root: pathlib.Path, model_name: str, dimension: int, search_threads: int = 1) -> None:
        import chromadb
        from chromadb.config import Settings

        root.mkdir(parents=True, exist_ok=True)
        faiss.omp_set_num_threads(search_threads)  # process-wide: FAISS has one OpenMP pool
        self.dimension = dimension
        self._client = chromadb.PersistentClient(
            path=str(root), settings=Settings(anonymized_telemetry=False, allow_reset=False)
        )
        self._collection = self._client.get_or_create_collection(
            collection_name(model_name, dimension),
            embedding_function=None,
            metadata={"hnsw:space": "cosine", "model": model_name, "dimension": dimension},
        )
        self._faiss: dict[str, faiss.IndexIDMap2] = {}
        self._lock = threading.RLock()

    @property
    def collection(self) -> str:
        return self._collection.name

    def _index(self, tenant: str) -> faiss.IndexIDMap2:
        index = self._faiss.get(tenant)
        if index is None:
            index = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dimension))
            self._faiss[tenant] = index
        return index

    def rebuild(self, known_chunk_ids: set[str]) -> tuple[int, int]:
        """Reloads FAISS from Chroma; deletes Chroma vectors without a chunk row. Returns (loaded, orphans)."""
        with self._lock:
            self._faiss.clear()
            orphans: list[str] = []
            loaded = offset = 0
            while True:
                page = self._collection.get(include=["embeddings", "metadatas"], limit=5000, offset=offset)
                ids = page["ids"]
                if not ids:
                    break
                offset += len(ids)
                vectors = np.asarray(page["embeddings"], dtype=np.float32)
                by_tenant: dict[str, list[int]] = {}
                for row, (chunk_id, meta) in enumerate(zip(ids, page["metadatas"] or [], strict=True)):
                    if chunk_id not in known_chunk_ids:
                        orphans.append(chunk_id)
                        continue
                    by_tenant.setdefault(str(meta["tenant"]), []).append(row)
                for tenant, rows in by_tenant.items():
                    keys = np.array([vector_key(ids[r]) for r in rows], dtype=np.int64)
                    self._index(tenant).add_with_ids(vectors[rows], keys)
                    loaded += len(rows)
            for start in range(0, len(orphans), _CHROMA_BATCH):
                self._collection.delete(ids=orphans[start : start + _CHROMA_BATCH])
        if orphans:
            log.warning("removed orphan vectors", extra={"fields": {"count": len(orphans)}})
        return loaded, len(orphans)

    def add(self, tenant: str, document_id: str, chunk_ids: Sequence[str], vectors: np.ndarray) -> None:
        """Writes vectors durably (Chroma) and into the tenant's FAISS index; replaces same ids."""
        if not chunk_ids:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        keys = np.array([vector_key(c) for c in chunk_ids], dtype=np.int64)
        with self._lock:
            for start in range(0, len(chunk_ids), _CHROMA_BATCH):
                stop = start + _CHROMA_BATCH
                self._collection.upsert(
                    ids=list(chunk_ids[start:stop]),
                    embeddings=vectors[start:stop],
                    metadatas=[{"tenant": tenant, "document_id": document_id}] * len(chunk_ids[start:stop]),
                )
            index = self._index(tenant)
            index.remove_ids(keys)  # type: ignore[arg-type]  # faiss's stubs name only the IDSelector form
            index.add_with_ids(vectors, keys)

    def remove(self, tenant: str, chunk_ids: Sequence[str]) -> None:
        if not chunk_ids:
            return
        with self._lock:
            for start in range(0, len(chunk_ids), _CHROMA_BATCH):
                self._collection.delete(ids=list(chunk_ids[start : start + _CHROMA_BATCH]))
            index = self._faiss.get(tenant)
            if index is not None:
                index.remove_ids(np.array([vector_key(c) for c in chunk_ids], dtype=np.int64))  # type: ignore[arg-type]

    def search(
        self, tenant: str, vector: np.ndarray, k: int, allowed_keys: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """(FAISS key, cosine similarity) best first, from this tenant's index only."""
        query = np.ascontiguousarray(np.asarray(vector, dtype=np.float32).reshape(1, -1))
        with self._lock:
            index = self._faiss.get(tenant)
            if index is None or index.ntotal == 0 or k <= 0:
                return []
            k = min(k, index.ntotal)
            if allowed_keys is not None:
                if not allowed_keys:
                    return []
                selector = faiss.IDSelectorBatch(np.asarray(allowed_keys, dtype=np.int64))
                scores, keys = index.search(query, k, params=faiss.SearchParameters(sel=selector))  # type: ignore[call-arg]  # SWIG kwargs
            else:
                scores, keys = index.search(query, k)
        return [(int(key), float(score)) for key, score in zip(keys[0], scores[0], strict=True) if key >= 0]

    def faiss_count(self, tenant: str) -> int:
        with self._lock:
            index = self._faiss.get(tenant)
            return 0 if index is None else int(index.ntotal)

    def stored_ids(self, tenant: str, document_id: str | None = None) -> list[str]:
        """Chunk ids held by Chroma for this tenant (and document)."""
        where: dict = {"tenant": tenant}
        if document_id is not None:
            where = {"$and": [{"tenant": tenant}, {"document_id": document_id}]}
        with self._lock:
            return list(self._collection.get(where=where, include=[])["ids"])

    def has_key(self, tenant: str, key: int) -> bool:
        with self._lock:
            index = self._faiss.get(tenant)
            if index is None:
                return False
            try:
                index.reconstruct(int(key))
            except RuntimeError:
                return False
            return True
