"""The durable copy of every chunk vector: one SQLite table, float32 blobs, nothing held in memory.

It replaced ChromaDB, which kept its own float32 HNSW graph of the whole collection resident in
the rag process although no search ever read it: at 1M chunks that graph alone was most of the
rag process's 4.48 GiB (bench/results/ann-scale-*.json, ``service``). Searches are served by the
per-tenant FAISS indexes (``ann``); this table is only written, and read at startup to rebuild
or complete them. A Chroma directory left by an older version is imported once, then removed.
"""

from __future__ import annotations

import logging
import pathlib
import shutil
import sqlite3
import threading
from collections.abc import Iterator, Sequence

import numpy as np

log = logging.getLogger("docuthinker.rag.vector_log")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    chunk_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    document_id TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS vectors_by_document ON vectors (tenant, document_id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_IN_BATCH = 5000  # well under SQLite's bound-parameter limit


class VectorLog:
    """Chunk id -> (tenant, document, float32 vector); thread-safe, one connection."""

    FILE = "vectors.sqlite3"

    def __init__(self, root: pathlib.Path, dimension: int) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.dimension = dimension
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(root / self.FILE, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")  # as the metadata store: survives a process crash
        self._conn.executescript(_SCHEMA)

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def upsert(self, tenant: str, document_id: str, chunk_ids: Sequence[str], vectors: np.ndarray) -> None:
        rows = np.ascontiguousarray(vectors, dtype=np.float32)
        self._insert([(c, tenant, document_id, rows[i].tobytes()) for i, c in enumerate(chunk_ids)])

    def _insert(self, rows: list[tuple[str, str, str, bytes]]) -> None:
        with self._lock, self._conn:
            self._conn.execute("BEGIN")
            self._conn.executemany(
                "INSERT OR REPLACE INTO vectors (chunk_id, tenant, document_id, vector) VALUES (?, ?, ?, ?)", rows)

    def delete(self, chunk_ids: Sequence[str]) -> None:
        with self._lock, self._conn:
            self._conn.execute("BEGIN")
            for start in range(0, len(chunk_ids), _IN_BATCH):
                part = list(chunk_ids[start : start + _IN_BATCH])
                self._conn.execute(f"DELETE FROM vectors WHERE chunk_id IN ({','.join('?' * len(part))})", part)

    def clear(self) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM vectors")

    def tenants_of(self) -> Iterator[tuple[str, str]]:
        """(chunk id, tenant) of every vector, in pages (no cursor is held across pages)."""
        last = ""
        while True:
            with self._lock:
                page = self._conn.execute(
                    "SELECT chunk_id, tenant FROM vectors WHERE chunk_id > ? ORDER BY chunk_id LIMIT 50000",
                    (last,)).fetchall()
            if not page:
                return
            yield from page
            last = page[-1][0]

    def vectors(self, chunk_ids: Sequence[str]) -> Iterator[tuple[list[str], np.ndarray]]:
        """(ids found, their vectors) in batches."""
        for start in range(0, len(chunk_ids), _IN_BATCH):
            part = list(chunk_ids[start : start + _IN_BATCH])
            with self._lock:
                rows = self._conn.execute(
                    f"SELECT chunk_id, vector FROM vectors WHERE chunk_id IN ({','.join('?' * len(part))})",
                    part).fetchall()
            if rows:
                matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
                yield [r[0] for r in rows], matrix.reshape(len(rows), self.dimension)

    def stored_ids(self, tenant: str, document_id: str | None = None) -> list[str]:
        query, args = "SELECT chunk_id FROM vectors WHERE tenant = ?", [tenant]
        if document_id is not None:
            query, args = query + " AND document_id = ?", [tenant, document_id]
        with self._lock:
            return [r[0] for r in self._conn.execute(query, args)]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def import_chroma(self, root: pathlib.Path, collection: str) -> str | None:
        """Copies a Chroma collection written by an older version into this log, then deletes the
        Chroma files; returns the embedder identity the collection recorded (None: none recorded)."""
        import chromadb
        from chromadb.config import Settings

        client = chromadb.PersistentClient(path=str(root), settings=Settings(anonymized_telemetry=False))
        recorded: str | None = None
        try:
            found = client.get_collection(collection)
        except Exception:  # noqa: BLE001 - chromadb raises several types for a missing collection
            found = None
        if found is not None:
            recorded = (found.metadata or {}).get("embedder")
            offset = 0
            while (page := found.get(include=["embeddings", "metadatas"], limit=5000, offset=offset))["ids"]:
                offset += len(page["ids"])
                vectors = np.asarray(page["embeddings"], dtype=np.float32)
                self._insert([(chunk_id, str(meta["tenant"]), str(meta["document_id"]), vectors[i].tobytes())
                              for i, (chunk_id, meta) in enumerate(zip(page["ids"], page["metadatas"] or [],
                                                                       strict=True))])
            log.info("imported the Chroma vectors", extra={"fields": {"vectors": offset}})
        del client
        for entry in root.iterdir():
            if entry.name.startswith(self.FILE):
                continue
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        return recorded
