"""Chunk vectors: a SQLite vector log is the durable copy, per-tenant FAISS indexes serve searches.

A tenant's index is exact (inner product on L2-normalised vectors, i.e. cosine) until it holds
``hnsw_threshold`` vectors, then HNSW (``ann``), snapshotted under ``snapshot_dir``. At startup
each tenant's index is reloaded from its snapshot (no graph rebuild) and completed from the log,
or rebuilt from the log when it has none; vectors whose chunk rows are unknown to the metadata
store (a crash between the two writes) are deleted from the log then, so the stores converge.
FAISS ids are ``vector_key(chunk_id)``. (ChromaDB was the durable copy until it was found to hold
a second, float32 HNSW graph of every vector in memory: ``vector_log``.)

The log records the embedder's identity (model, weights hash, precision): opening it
with another embedder raises ``EmbedderMismatchError`` instead of mixing two models' vectors.
"""

from __future__ import annotations

import hashlib
import logging
import pathlib
import re
import shutil
import threading
import zipfile
from collections.abc import Sequence

import faiss
import numpy as np

from services.rag.documents import vector_key
from services.rag.store.ann import ExactIndex, HnswIndex, HnswParams
from services.rag.store.vector_log import VectorLog

log = logging.getLogger("docuthinker.rag.vectors")

def collection_name(model_name: str, dimension: int) -> str:
    """The vector set named after the embedding model and dimension, e.g. ``all-MiniLM-L6-v2-384d`` (the Chroma
    collection of older versions had this name)."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", f"{model_name}-{dimension}d")


class EmbedderMismatchError(RuntimeError):
    """The index holds vectors of another embedder than the one the service runs."""

    def __init__(self, recorded: str, running: str) -> None:
        super().__init__(
            f"the index holds vectors of {recorded}, the service runs {running}: set "
            "DOCUTHINKER_EMBED_RUNTIME back, or set DOCUTHINKER_RAG_REINDEX_ON_MODEL_CHANGE=true "
            "to re-embed every chunk with the new model at startup")


def in_progress(identity: str) -> str:
    """The stamp of a store emptied for a re-index to ``identity`` that has not finished: a crash
    mid-way leaves a stamp no embedder matches, so the next start re-indexes again or refuses."""
    return f"{identity} (re-index in progress)"


class VectorStore:
    def __init__(self, root: pathlib.Path, model_name: str, dimension: int, search_threads: int = 1,
                 identity: str | None = None, hnsw_threshold: int = 50_000, hnsw: HnswParams | None = None,
                 snapshot_dir: pathlib.Path | None = None, check_identity: bool = True,
                 legacy_identity: str | None = None) -> None:
        """``identity`` defaults to ``model_name`` (test embedders); a collection made before identities
        were recorded holds ``legacy_identity``'s vectors (default: ``identity``) and is stamped so."""
        root.mkdir(parents=True, exist_ok=True)
        faiss.omp_set_num_threads(search_threads)  # process-wide: FAISS has one OpenMP pool
        self.dimension = dimension
        self.identity = identity or model_name
        self.hnsw_threshold = hnsw_threshold
        self.hnsw = hnsw or HnswParams()
        self._snapshots = snapshot_dir or root.parent / "ann"
        self._name = collection_name(model_name, dimension)
        self._log = VectorLog(root, dimension)
        recorded = self._log.get_meta("embedder")
        if recorded is None:
            if (root / "chroma.sqlite3").exists():  # written by a version that kept vectors in Chroma
                recorded = self._log.import_chroma(root, self._name) or legacy_identity or self.identity
            else:
                recorded = self.identity
            self._log.set_meta("embedder", recorded)
        if recorded != self.identity and check_identity:
            raise EmbedderMismatchError(recorded, self.identity)
        self._model_name = model_name
        self._faiss: dict[str, ExactIndex | HnswIndex] = {}
        self._unsaved: dict[str, int] = {}
        self._lock = threading.RLock()

    @property
    def collection(self) -> str:
        """The name of the vector set: model and dimension, e.g. ``all-MiniLM-L6-v2-384d``."""
        return self._name

    def reset(self) -> None:
        """Drops every vector and snapshot; the store is stamped as mid-re-index until ``mark_complete``."""
        with self._lock:
            self._log.clear()
            self._log.set_meta("embedder", in_progress(self.identity))
            shutil.rmtree(self._snapshots, ignore_errors=True)
            self._faiss.clear()

    def mark_complete(self) -> None:
        """Stamps the store with this store's identity: every vector in it is this embedder's."""
        with self._lock:
            self._log.set_meta("embedder", self.identity)

    def snapshot_path(self, tenant: str) -> pathlib.Path:
        """Where the tenant's HNSW snapshot lives (benchmarks place prebuilt ones there)."""
        return self._snapshot(tenant)

    def _snapshot(self, tenant: str) -> pathlib.Path:
        return self._snapshots / f"{hashlib.sha256(tenant.encode()).hexdigest()[:32]}.npz"

    def _index(self, tenant: str) -> ExactIndex | HnswIndex:
        index = self._faiss.get(tenant)
        if index is None:
            index = ExactIndex(self.dimension)
            self._faiss[tenant] = index
        return index

    def _grow(self, tenant: str, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Adds to the tenant's index, moving it to HNSW past the threshold and snapshotting HNSW growth."""
        index = self._index(tenant)
        index.add(keys, vectors)
        if isinstance(index, ExactIndex):
            if index.count < self.hnsw_threshold:
                return
            all_keys, all_vectors = index.items()
            index = HnswIndex(self.dimension, self.hnsw)
            index.add(all_keys, all_vectors)
            self._faiss[tenant] = index
            log.info("tenant index is now HNSW", extra={"fields": {"tenant": tenant, "vectors": index.count}})
            self._save(tenant)
            return
        self._unsaved[tenant] = self._unsaved.get(tenant, 0) + len(keys)
        if self._unsaved[tenant] >= max(10_000, index.count // 10):
            self._save(tenant)

    def _save(self, tenant: str) -> None:
        index = self._faiss.get(tenant)
        if isinstance(index, HnswIndex):
            self._snapshots.mkdir(parents=True, exist_ok=True)
            index.save(self._snapshot(tenant))
            self._unsaved[tenant] = 0

    def flush(self) -> None:
        """Snapshots every HNSW index with unsaved changes (at shutdown)."""
        with self._lock:
            for tenant, unsaved in list(self._unsaved.items()):
                if unsaved:
                    self._save(tenant)

    def rebuild(self, known_chunk_ids: set[str]) -> tuple[int, int]:
        """Loads each tenant's HNSW snapshot and completes it from the log (or rebuilds it from the log);
        deletes logged vectors without a chunk row. Returns (vectors indexed, orphans)."""
        with self._lock:
            self._faiss.clear()
            orphans: list[str] = []
            by_tenant: dict[str, list[str]] = {}
            for chunk_id, tenant in self._log.tenants_of():
                if chunk_id not in known_chunk_ids:
                    orphans.append(chunk_id)
                else:
                    by_tenant.setdefault(tenant, []).append(chunk_id)
            for tenant, chunk_ids in by_tenant.items():
                self._load_tenant(tenant, chunk_ids)
            self._log.delete(orphans)
            for stale in self._snapshots.glob(".*.tmp"):  # a crash mid-snapshot
                stale.unlink(missing_ok=True)
            loaded = sum(index.count for index in self._faiss.values())
        if orphans:
            log.warning("removed orphan vectors", extra={"fields": {"count": len(orphans)}})
        return loaded, len(orphans)

    def _load_tenant(self, tenant: str, chunk_ids: list[str]) -> None:
        path = self._snapshot(tenant)
        wanted = {vector_key(c): c for c in chunk_ids}
        if path.exists():
            try:
                index = HnswIndex.load(path, self.dimension, self.hnsw)
            except (OSError, ValueError, RuntimeError, KeyError, zipfile.BadZipFile) as exc:
                log.warning("unreadable HNSW snapshot, rebuilding", extra={"fields": {"tenant": tenant,
                                                                                      "error": str(exc)}})
            else:
                self._faiss[tenant] = index
                stale = [k for k in index.live_keys() if k not in wanted]
                if stale:
                    index.remove(np.array(stale, dtype=np.int64))
                held = index.has_keys(np.fromiter(wanted, dtype=np.int64, count=len(wanted)))
                missing = [c for c, ok in zip(wanted.values(), held.tolist(), strict=True) if not ok]
                self._add_from_log(tenant, missing)
                if missing or stale:
                    self._save(tenant)
                return
        self._add_from_log(tenant, chunk_ids)

    def _add_from_log(self, tenant: str, chunk_ids: list[str]) -> None:
        for ids, vectors in self._log.vectors(chunk_ids):
            self._grow(tenant, np.array([vector_key(c) for c in ids], dtype=np.int64), vectors)

    def add(self, tenant: str, document_id: str, chunk_ids: Sequence[str], vectors: np.ndarray) -> None:
        """Writes vectors durably (the vector log) and into the tenant's FAISS index; replaces same ids."""
        if not chunk_ids:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        keys = np.array([vector_key(c) for c in chunk_ids], dtype=np.int64)
        with self._lock:
            self._log.upsert(tenant, document_id, chunk_ids, vectors)
            self._grow(tenant, keys, vectors)

    def remove(self, tenant: str, chunk_ids: Sequence[str]) -> None:
        if not chunk_ids:
            return
        with self._lock:
            self._log.delete(chunk_ids)
            index = self._faiss.get(tenant)
            if index is not None:
                index.remove(np.array([vector_key(c) for c in chunk_ids], dtype=np.int64))
                if isinstance(index, HnswIndex):
                    self._unsaved[tenant] = self._unsaved.get(tenant, 0) + len(chunk_ids)

    def search(
        self, tenant: str, vector: np.ndarray, k: int, allowed_keys: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """(FAISS key, cosine similarity) best first, from this tenant's index only."""
        query = np.ascontiguousarray(np.asarray(vector, dtype=np.float32).reshape(1, -1))
        with self._lock:
            index = self._faiss.get(tenant)
            if index is None or index.count == 0 or k <= 0:
                return []
            k = min(k, index.count)
            if allowed_keys is not None and not allowed_keys:
                return []
            scores, keys = index.search(query, k, allowed_keys)
        return [(int(key), float(score)) for key, score in zip(keys[0], scores[0], strict=True) if key >= 0]

    def faiss_count(self, tenant: str) -> int:
        with self._lock:
            index = self._faiss.get(tenant)
            return 0 if index is None else index.count

    def index_kind(self, tenant: str) -> str:
        """``exact`` or ``hnsw``."""
        with self._lock:
            return self._index(tenant).kind

    def vectors_of(self, tenant: str, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these chunks (ids without one are absent), read from the log."""
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for ids, matrix in self._log.vectors(list(chunk_ids)):
                found.update(zip(ids, matrix, strict=True))
        return found

    def stored_ids(self, tenant: str, document_id: str | None = None) -> list[str]:
        """Chunk ids held durably for this tenant (and document)."""
        with self._lock:
            return self._log.stored_ids(tenant, document_id)

    def has_key(self, tenant: str, key: int) -> bool:
        with self._lock:
            index = self._faiss.get(tenant)
            return index is not None and index.has_key(key)
