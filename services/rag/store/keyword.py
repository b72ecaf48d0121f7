"""Persisted per-tenant BM25 indexes (bm25s), derived from the visible chunks in SQLite.

BM25 statistics are corpus-wide, so an index is rebuilt as a whole. Each index records the
metadata ``generation`` it was built from; a search first rebuilds a stale index, so keyword
results always match what SQLite says is visible (ingestion stays atomic), and the service
also refreshes indexes in the background shortly after each change so searches rarely wait.
On disk: ``<root>/<tenant>/gen-<n>/`` plus a ``CURRENT`` file naming it (swapped atomically).
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import shutil
import threading
from dataclasses import dataclass
from typing import Protocol

import bm25s
import numpy as np
import Stemmer


class ChunkTexts(Protocol):
    """What the BM25 cache reads of a metadata store (the SQLite one or the PostgreSQL one)."""

    def generation(self, tenant: str) -> int: ...

    def visible_texts(self, tenant: str) -> tuple[int, list[tuple[str, str]]]: ...


log = logging.getLogger("docuthinker.rag.keyword")
FORMAT = 2
"""What an index on disk was built from (2: chunk text plus its document's name and headings); another is rebuilt."""


def tokenize(texts: list[str]) -> list[list[str]]:
    # PyStemmer objects are not thread-safe; one per call is cheap.
    return bm25s.tokenize(
        texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), return_ids=False, show_progress=False
    )


@dataclass(frozen=True)
class _Built:
    generation: int
    chunk_ids: tuple[str, ...]
    retriever: bm25s.BM25 | None


class KeywordIndex:
    def __init__(self, root: pathlib.Path, metadata: ChunkTexts) -> None:
        self._root = root
        self._metadata = metadata
        self._built: dict[str, _Built] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        root.mkdir(parents=True, exist_ok=True)

    def _lock(self, tenant: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(tenant, threading.Lock())

    # -- persistence -----------------------------------------------------------------
    def load(self) -> None:
        """Loads every persisted index; stale ones are rebuilt on first use."""
        for tenant_dir in sorted(p for p in self._root.iterdir() if p.is_dir()):
            current = tenant_dir / "CURRENT"
            try:
                gen_dir = tenant_dir / current.read_text().strip()
                meta = json.loads((gen_dir / "chunks.json").read_text())
                if meta.get("format", 1) != FORMAT:
                    continue  # built from other texts: rebuilt on first use
                retriever = bm25s.BM25.load(str(gen_dir), show_progress=False) if meta["chunk_ids"] else None
            except (OSError, ValueError, KeyError) as exc:
                log.warning("unreadable keyword index; it will be rebuilt",
                            extra={"fields": {"tenant": tenant_dir.name, "error": str(exc)}})
                continue
            self._built[tenant_dir.name] = _Built(meta["generation"], tuple(meta["chunk_ids"]), retriever)

    def _persist(self, tenant: str, built: _Built) -> None:
        tenant_dir = self._root / tenant
        name = f"gen-{built.generation}"
        target = tenant_dir / name
        staging = tenant_dir / f".{name}.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        if built.retriever is not None:
            built.retriever.save(str(staging), show_progress=False)
        (staging / "chunks.json").write_text(
            json.dumps({"format": FORMAT, "generation": built.generation, "chunk_ids": list(built.chunk_ids)})
        )
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
        pointer = tenant_dir / ".CURRENT.tmp"
        pointer.write_text(name)
        os.replace(pointer, tenant_dir / "CURRENT")
        for old in tenant_dir.glob("gen-*"):
            if old.name != name:
                shutil.rmtree(old, ignore_errors=True)

    # -- building --------------------------------------------------------------------
    def is_fresh(self, tenant: str) -> bool:
        built = self._built.get(tenant)
        return built is not None and built.generation == self._metadata.generation(tenant)

    def refresh(self, tenant: str) -> bool:
        """Rebuilds the tenant's index if SQLite moved on since it was built; True if rebuilt."""
        if self.is_fresh(tenant):
            return False
        with self._lock(tenant):
            if self.is_fresh(tenant):
                return False
            generation, rows = self._metadata.visible_texts(tenant)
            retriever = None
            if rows:
                retriever = bm25s.BM25()
                retriever.index(tokenize([text for _, text in rows]), show_progress=False)
            built = _Built(generation, tuple(chunk_id for chunk_id, _ in rows), retriever)
            self._persist(tenant, built)
            self._built[tenant] = built
            return True

    # -- reading ---------------------------------------------------------------------
    def search(
        self, tenant: str, query: str, k: int, allowed_chunk_ids: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """(chunk id, BM25 score) best first; only chunks with a positive score."""
        self.refresh(tenant)
        built = self._built.get(tenant)
        if built is None or built.retriever is None or k <= 0:
            return []
        tokens = tokenize([query])[0]
        if not tokens:
            return []
        mask = None
        if allowed_chunk_ids is not None:
            mask = np.fromiter((c in allowed_chunk_ids for c in built.chunk_ids), dtype=np.float32,
                               count=len(built.chunk_ids))
        scores = built.retriever.get_scores(tokens, weight_mask=mask)
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(built.chunk_ids[i], float(scores[i])) for i in top if scores[i] > 0]

    def indexed_ids(self, tenant: str) -> tuple[str, ...]:
        built = self._built.get(tenant)
        return built.chunk_ids if built else ()

    def persisted_ids(self, tenant: str) -> list[str]:
        """Chunk ids in the index on disk (what a restarted process would load)."""
        tenant_dir = self._root / tenant
        try:
            name = (tenant_dir / "CURRENT").read_text().strip()
            return json.loads((tenant_dir / name / "chunks.json").read_text())["chunk_ids"]
        except (OSError, ValueError, KeyError):
            return []
