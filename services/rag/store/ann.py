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
import zipfile
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
    """Defaults as ``RagSettings.hnsw_*``, which documents the measurements behind them."""

    m: int = 32
    """Graph neighbours per node."""
    ef_construction: int = 200
    """Candidate list while inserting."""
    ef_search: int = 256
    """Candidate list per search."""


def _last_of_each(keys: np.ndarray, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One row per key, the last one given (an add replaces)."""
    _, first_in_reversed = np.unique(keys[::-1], return_index=True)
    if len(first_in_reversed) == len(keys):
        return keys, vectors
    rows = np.sort(len(keys) - 1 - first_in_reversed)
    return keys[rows], vectors[rows]


def _read_index_member(path: pathlib.Path) -> faiss.Index:
    """The snapshot's serialised index streamed from the archive into FAISS. ``np.load`` would first
    materialise the whole byte array (1 GiB at 1M vectors) next to the index built from it, and
    that doubled copy was the rag process's peak RSS at startup (bench/results/ann-scale-*-1m.json)."""
    with zipfile.ZipFile(path) as archive, archive.open("index.npy") as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            np.lib.format.read_array_header_1_0(member)
        else:
            np.lib.format.read_array_header_2_0(member)
        return faiss.read_index(faiss.PyCallbackIOReader(member.read))


def _live_blocks(index: faiss.Index, keys: np.ndarray, live: np.ndarray, block: int):
    """(keys, vectors) of the live labels, ``block`` labels at a time, decoded from the index."""
    for start in range(0, len(keys), block):
        stop = min(len(keys), start + block)
        mask = live[start:stop]
        if mask.any():
            yield keys[start:stop][mask], index.reconstruct_n(start, stop - start)[mask]


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
    _BLOCK = 50_000

    def __init__(self, dimension: int, params: HnswParams) -> None:
        self.dimension = dimension
        self.params = params
        self._index = self._empty()
        # The key map lives in numpy arrays, not a dict: at 1M vectors a dict of Python ints costs
        # about 120 MiB, these 24 MiB (bench/results/ann-scale-*.json, accounted_mib).
        self._keys = np.zeros(0, dtype=np.int64)  # label -> key
        self._live = np.zeros(0, dtype=bool)  # label -> not tombstoned
        self._sorted_keys = np.zeros(0, dtype=np.int64)  # every label's key, ascending (ties: older label first)
        self._sorted_labels = np.zeros(0, dtype=np.int64)  # the labels in that order
        self._count = 0

    def _empty(self) -> faiss.Index:
        index = faiss.IndexHNSWSQ(self.dimension, faiss.ScalarQuantizer.QT_fp16, self.params.m,
                                  faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = self.params.ef_construction
        index.hnsw.efSearch = self.params.ef_search
        index.train(np.zeros((1, self.dimension), dtype=np.float32))  # fp16 needs no statistics
        return index

    @property
    def count(self) -> int:
        return self._count

    @property
    def dead(self) -> int:
        return len(self._keys) - self._count

    def _labels_of(self, keys: np.ndarray) -> np.ndarray:
        """The live label of each key, -1 where it has none. A replaced key's newest label is the
        last of its run in the sorted order, and the only one that can be live."""
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        if not len(self._keys):
            return np.full(len(keys), -1, dtype=np.int64)
        pos = np.searchsorted(self._sorted_keys, keys, side="right") - 1
        labels = self._sorted_labels[np.clip(pos, 0, None)]
        ok = (pos >= 0) & (self._keys[labels] == keys) & self._live[labels]
        return np.where(ok, labels, -1)

    def add(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        keys, vectors = _last_of_each(keys, vectors)
        self._tombstone(keys)
        self._append(keys, vectors)
        self._maybe_compact()

    def _append(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        first = int(self._index.ntotal)
        self._index.add(vectors)
        keys = keys.astype(np.int64)
        self._keys = np.concatenate([self._keys, keys])
        self._live = np.concatenate([self._live, np.ones(len(keys), dtype=bool)])
        self._count += len(keys)
        order = np.argsort(keys, kind="stable")
        at = np.searchsorted(self._sorted_keys, keys[order], side="right")  # after older labels of a key
        self._sorted_keys = np.insert(self._sorted_keys, at, keys[order])
        self._sorted_labels = np.insert(self._sorted_labels, at, first + order)

    def remove(self, keys: np.ndarray) -> None:
        self._tombstone(keys)
        self._maybe_compact()

    def _tombstone(self, keys: np.ndarray) -> None:
        labels = self._labels_of(keys)
        labels = np.unique(labels[labels >= 0])
        self._live[labels] = False
        self._count -= len(labels)

    def _maybe_compact(self) -> None:
        if self.dead and self.dead > self._REBUILD_DEAD_SHARE * len(self._keys):
            old = self._index, self._keys, self._live
            self._index = self._empty()
            self._keys, self._live = np.zeros(0, np.int64), np.zeros(0, bool)
            self._sorted_keys, self._sorted_labels, self._count = np.zeros(0, np.int64), np.zeros(0, np.int64), 0
            for keys, vectors in _live_blocks(*old, self._BLOCK):  # no float32 copy of the whole index
                self._append(keys, vectors)

    def live_keys(self) -> list[int]:
        return self._keys[self._live].tolist()

    def has_key(self, key: int) -> bool:
        return bool(self._labels_of(np.array([key]))[0] >= 0)

    def has_keys(self, keys: np.ndarray) -> np.ndarray:
        """``has_key`` of each key at once (a startup check of 1M keys one by one took seconds)."""
        return self._labels_of(keys) >= 0

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        blocks = list(_live_blocks(self._index, self._keys, self._live, self._BLOCK))
        if not blocks:
            return np.zeros(0, np.int64), np.zeros((0, self.dimension), np.float32)
        return np.concatenate([k for k, _ in blocks]), np.concatenate([v for _, v in blocks])

    def memory_bytes(self) -> dict[str, int]:
        """What the index holds, by part (the process's RSS also has allocator slack on top)."""
        hnsw = self._index.hnsw
        return {"vectors_fp16": int(self._index.ntotal) * self.dimension * 2,
                "graph": hnsw.neighbors.size() * 4 + hnsw.levels.size() * 4 + hnsw.offsets.size() * 8,
                "key_maps": sum(a.nbytes for a in (self._keys, self._live, self._sorted_keys, self._sorted_labels))}

    def search(self, query: np.ndarray, k: int, allowed_keys: Sequence[int] | None) -> tuple[np.ndarray, np.ndarray]:
        params = faiss.SearchParametersHNSW()
        params.efSearch = max(self.params.ef_search, k)
        if allowed_keys is not None:
            labels = self._labels_of(np.asarray(list(allowed_keys), dtype=np.int64))
            selector = faiss.IDSelectorBatch(labels[labels >= 0])
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
        index = cls(dimension, params)
        with np.load(path) as snapshot:
            index._keys = snapshot["keys"].astype(np.int64)
            index._live = snapshot["live"].astype(bool)
        index._index = _read_index_member(path)
        index._index.hnsw.efSearch = params.ef_search
        if index._index.ntotal != len(index._keys) or index._index.d != dimension:
            raise ValueError(f"inconsistent HNSW snapshot {path}")
        index._sorted_labels = np.argsort(index._keys, kind="stable")
        index._sorted_keys = index._keys[index._sorted_labels]
        index._count = int(np.count_nonzero(index._live))
        return index
