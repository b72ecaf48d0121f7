"""Retrieval over document versions: the live chunks by default, an earlier version when asked for by number.

``VersionedIndex`` is the chunk index retrieval and the answer engine read (``retrieval.ports.ChunkIndex``).
A ``document_ids`` entry ``"<id>@<n>"`` restricts to version n of the document: its live version is
searched as ever; an archived one exactly, over the vectors and texts kept with it (a version holds at most
``DOCUTHINKER_RAG_MAX_CHUNKS_PER_DOCUMENT`` chunks, so a full scan is cheap; its BM25 statistics are its
own, built once and cached: an archived version never changes). ``get_chunks`` also finds archived
chunks, so answers from an earlier version cite it. ``VersionedLookup`` is the document check the answer
engine runs on ``document_ids``: ``"<id>@<n>"`` exists when version n of the document does.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import bm25s
import numpy as np

from services.rag.documents import Chunk, DocumentRecord
from services.rag.store.keyword import tokenize
from services.rag.store.ports import ChunkIndexPort, MetadataPort
from services.rag.versions.model import VersionState, split_version

Hit = tuple[str, float]
_BM25_CACHE = 16
"""Archived versions whose BM25 index is kept in memory."""


class VersionedIndex:
    def __init__(self, index: ChunkIndexPort, metadata: MetadataPort) -> None:
        self._index = index
        self._metadata = metadata
        self._bm25: OrderedDict[tuple[str, str, int], tuple[tuple[str, ...], bm25s.BM25 | None]] = OrderedDict()
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)  # every other port of the chunk index, unchanged

    def _split(self, tenant: str, document_ids: Sequence[str] | None) -> tuple[list[str] | None, list[tuple[str, int]]]:
        """(live document ids, or None for the whole tenant; [(document id, archived version)])."""
        if document_ids is None:
            return None, []
        live: list[str] = []
        pinned: list[tuple[str, int]] = []
        for entry in document_ids:
            base, version = split_version(entry)
            if version is None:
                live.append(entry)
                continue
            record = self._metadata.get_document(tenant, base)
            if record is None or record.version_of:
                continue
            if version == record.version:
                live.append(base)
            else:
                pinned.append((base, version))
        return live, pinned

    def dense_search(self, tenant: str, query_vector: np.ndarray, k: int,
                     document_ids: Sequence[str] | None = None) -> list[Hit]:
        live, pinned = self._split(tenant, document_ids)
        if not pinned:
            return self._index.dense_search(tenant, query_vector, k, live)
        hits = self._index.dense_search(tenant, query_vector, k, live) if live else []
        query = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        for document_id, version in pinned:
            stored = [(s.chunk_id, s.vector) for s in self._metadata.archived_vectors(tenant, document_id, version)
                      if s.vector is not None]
            if stored:
                scores = np.stack([vector for _, vector in stored]) @ query
                hits.extend((chunk_id, float(score)) for (chunk_id, _), score in zip(stored, scores, strict=True))
        return sorted(hits, key=lambda hit: -hit[1])[:k]

    def keyword_search(self, tenant: str, query: str, k: int, document_ids: Sequence[str] | None = None) -> list[Hit]:
        live, pinned = self._split(tenant, document_ids)
        if not pinned:
            return self._index.keyword_search(tenant, query, k, live)
        hits = self._index.keyword_search(tenant, query, k, live) if live else []
        tokens = tokenize([query])[0]
        for document_id, version in pinned:
            ids, retriever = self._version_bm25(tenant, document_id, version)
            if retriever is None or not tokens:
                continue
            scores = retriever.get_scores(tokens)
            hits.extend((ids[i], float(scores[i])) for i in np.argsort(-scores)[:k] if scores[i] > 0)
        return sorted(hits, key=lambda hit: -hit[1])[:k]

    def _version_bm25(self, tenant: str, document_id: str, version: int) -> tuple[tuple[str, ...], bm25s.BM25 | None]:
        key = (tenant, document_id, version)
        with self._lock:
            if key in self._bm25:
                self._bm25.move_to_end(key)
                return self._bm25[key]
        stored = self._metadata.archived_vectors(tenant, document_id, version)
        retriever = None
        if stored:
            retriever = bm25s.BM25()
            retriever.index(tokenize([s.text for s in stored]), show_progress=False)
        built = (tuple(s.chunk_id for s in stored), retriever)
        with self._lock:
            self._bm25[key] = built
            while len(self._bm25) > _BM25_CACHE:
                self._bm25.popitem(last=False)
        return built

    def get_chunks(self, tenant: str, ids: Sequence[str]) -> list[Chunk]:
        found = {c.chunk_id: c for c in self._index.get_chunks(tenant, ids)}
        missing = [i for i in ids if i not in found]
        if missing:
            found.update((c.chunk_id, c) for c in self._metadata.archived_chunks_by_id(tenant, missing))
        return [found[i] for i in ids if i in found]


class VersionedLookup:
    """The answer engine's ``DocumentLookup``: ``"<id>@<n>"`` names version n of a document."""

    def __init__(self, metadata: MetadataPort) -> None:
        self._metadata = metadata

    def get_document(self, tenant: str, document_id: str) -> DocumentRecord | None:
        base, version = split_version(document_id)
        record = self._metadata.get_document(tenant, base)
        if record is None or record.version_of:
            return None
        if version is None or version == record.version:
            return record
        published = {v.version for v in self._metadata.versions(tenant, base)
                     if v.state in (VersionState.LIVE, VersionState.SUPERSEDED)}
        return record if version in published else None
