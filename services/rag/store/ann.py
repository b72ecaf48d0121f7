"""One tenant's search index: exact (FAISS flat) while small, HNSW once it is large.

``ExactIndex`` scans every vector (inner product on L2-normalised vectors = cosine). Past a
threshold a tenant moves to ``HnswIndex``: FAISS ``IndexHNSWSQ`` with fp16 storage (half the
memory of float32; recall unchanged at this dimension, bench/ann_bench.py), grown one add at a
time. HNSW graphs cannot delete, so a removed or replaced vector is a tombstone (its label stops
being live) and the graph is rebuilt from the live vectors once tombstones pass a quarter of it.

A snapshot is one ``.npz`` file (serialised index, label->key map, live mask) written to a
temporary name and renamed over the old one, so a crash mid-write leaves the previous snapshot
(or none) and never a torn one; the caller adds what the snapshot lacks from the durable copy.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import faiss as _faiss
import numpy as np

# faiss's SWIG stubs miss the keyword forms and several index types used here (SearchParametersHNSW,
# IDSelectorBitmap, remove_ids on an array): the module is used untyped rather than ignore every line.
faiss: Any = _faiss


@dataclass(frozen=True)
class HnswParams:
    m: int = 32
    """Graph neighbours per node (bench/ann_bench.py: recall@10 0.9995 of exact at 20k vectors, ef_search 64+)."""
    ef_construction: int = 80
    ef_search: int = 96


def _last_of_each(keys: np.ndarray, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One row per key, the last one given (an add replaces)."""
    _, first_in_reversed = np.unique(keys[::-1], return_index=True)
    if len(first_in_reversed) == len(keys):
        return keys, vectors
    rows = np.sort(len(keys) - 1 - first_in_reversed)
    return keys[rows], vectors[rows]


class ExactIndex:
    kind = "exact"

    def __init__(self, dimension: int) -> None:
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))

    @property
    def count(self) -> int:
        return int(self._index.ntotal)

    def add(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        self._index.remove_ids(keys)
        self._index.add_with_ids(vectors, keys)

    def remove(self, keys: np.ndarray) -> None:
        self._index.remove_ids(keys)

    def live_keys(self) -> list[int]:
        return faiss.vector_to_array(self._index.id_map).tolist()

    def has_key(self, key: int) -> bool:
        try:
            self._index.reconstruct(int(key))
        except RuntimeError:
            return False
        return True

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys, vectors) of everything indexed."""
        n = self.count
        keys = faiss.vector_to_array(self._index.id_map).astype(np.int64)
        vectors = self._index.index.reconstruct_n(0, n) if n else np.zeros((0, self._index.d), np.float32)
        return keys, vectors

    def search(self, query: np.ndarray, k: int, allowed_keys: Sequence[int] | None) -> tuple[np.ndarray, np.ndarray]:
        if allowed_keys is None:
            return self._index.search(query, k)
        selector = faiss.IDSelectorBatch(np.asarray(allowed_keys, dtype=np.int64))
        return self._index.search(query, k, params=faiss.SearchParameters(sel=selector))


class HnswIndex:
    kind = "hnsw"
    _REBUILD_DEAD_SHARE = 0.25

    def __init__(self, dimension: int, params: HnswParams) -> None:
        self.dimension = dimension
        self.params = params
        self._index = self._empty()
        self._keys = np.zeros(0, dtype=np.int64)  # label -> key
        self._live = np.zeros(0, dtype=bool)  # label -> not tombstoned
        self._label: dict[int, int] = {}  # live key -> label

    def _empty(self) -> faiss.Index:
        index = faiss.IndexHNSWSQ(self.dimension, faiss.ScalarQuantizer.QT_fp16, self.params.m,
                                  faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = self.params.ef_construction
        index.hnsw.efSearch = self.params.ef_search
        index.train(np.zeros((1, self.dimension), dtype=np.float32))  # fp16 needs no statistics
        return index

    @property
    def count(self) -> int:
        return len(self._label)

    @property
    def dead(self) -> int:
        return len(self._keys) - len(self._label)

    def add(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        keys, vectors = _last_of_each(keys, vectors)
        self._tombstone(keys)
        self._append(keys, vectors)
        self._maybe_compact()

    def _append(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        first = int(self._index.ntotal)
        self._index.add(vectors)
        self._keys = np.concatenate([self._keys, keys.astype(np.int64)])
        self._live = np.concatenate([self._live, np.ones(len(keys), dtype=bool)])
        for offset, key in enumerate(keys.tolist()):
            self._label[key] = first + offset

    def remove(self, keys: np.ndarray) -> None:
        self._tombstone(keys)
        self._maybe_compact()

    def _tombstone(self, keys: np.ndarray) -> None:
        for key in keys.tolist():
            label = self._label.pop(key, None)
            if label is not None:
                self._live[label] = False

    def _maybe_compact(self) -> None:
        if self.dead and self.dead > self._REBUILD_DEAD_SHARE * len(self._keys):
            keys, vectors = self.items()
            self._index = self._empty()
            self._keys, self._live, self._label = np.zeros(0, np.int64), np.zeros(0, bool), {}
            self._append(keys, vectors)

    def live_keys(self) -> list[int]:
        return list(self._label)

    def has_key(self, key: int) -> bool:
        return int(key) in self._label

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        labels = np.flatnonzero(self._live)
        vectors = (np.stack([self._index.reconstruct(int(lab)) for lab in labels]) if len(labels)
                   else np.zeros((0, self.dimension), np.float32))
        return self._keys[labels], vectors

    def search(self, query: np.ndarray, k: int, allowed_keys: Sequence[int] | None) -> tuple[np.ndarray, np.ndarray]:
        params = faiss.SearchParametersHNSW()
        params.efSearch = max(self.params.ef_search, k)
        if allowed_keys is not None:
            labels = [self._label[key] for key in allowed_keys if key in self._label]
            selector = faiss.IDSelectorBatch(np.asarray(labels, dtype=np.int64))
            params.sel = selector
        elif self.dead:
            bitmap = np.packbits(self._live, bitorder="little")  # must outlive the search
            selector = faiss.IDSelectorBitmap(len(bitmap), faiss.swig_ptr(bitmap))
            params.sel = selector
        scores, labels = self._index.search(query, k, params=params)
        keys = np.where(labels >= 0, self._keys[np.clip(labels, 0, None)], -1)
        return scores, keys

    def save(self, path: pathlib.Path) -> None:
        """Atomic: the file at ``path`` is the old snapshot or the complete new one, never a partial one."""
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with tmp.open("wb") as fh:
                np.savez(fh, index=faiss.serialize_index(self._index), keys=self._keys, live=self._live,
                         params=np.array([self.params.m, self.params.ef_construction, self.params.ef_search]))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: pathlib.Path, dimension: int, params: HnswParams) -> HnswIndex:
        with np.load(path) as snapshot:
            index = cls(dimension, params)
            index._index = faiss.deserialize_index(snapshot["index"])
            index._index.hnsw.efSearch = params.ef_search
            index._keys = snapshot["keys"].astype(np.int64)
            index._live = snapshot["live"].astype(bool)
        if index._index.ntotal != len(index._keys) or index._index.d != dimension:
            raise ValueError(f"inconsistent HNSW snapshot {path}")
        index._label = {int(index._keys[lab]): int(lab) for lab in np.flatnonzero(index._live)}
        return index
