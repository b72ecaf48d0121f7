"""A benchmark corpus indexed in process with the production chunker and stores.

Texts go through ``services.rag.ingest.chunking`` and into the production ``ChunkIndex``
(SQLite metadata, vector log + FAISS, bm25s keyword index) in a temporary directory, as
one plain-text document each. Only parsing is skipped (the inputs are already plain text).

Embedding is the slow part on a CPU (about 30 chunks/s on 2 cores), so vectors are cached on
disk by the sha256 of the exact text; the cache is model-specific and lives under data/.
"""

from __future__ import annotations

import hashlib
import pathlib
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from services.models.embedder import MODEL_NAME, WEIGHTS_SHA256, get_embedder
from services.rag.documents import (
    Chunk,
    DocumentRecord,
    DocumentStatus,
    GraphSyncState,
    Provenance,
    Section,
    chunk_id_for,
    document_id_for,
)
from services.rag.ingest.chunking import ChunkerConfig, chunk_sections
from services.rag.settings import RagSettings
from services.rag.store import ChunkIndex, KeywordIndex, MetadataStore, VectorStore

CACHE_DIR = pathlib.Path("data/bench-cache")


class DiskCachedEncoder:
    """The production embedder with a persistent cache keyed by text hash (benchmarks only)."""

    SAVE_EVERY = 1024

    def __init__(self, namespace: str = "", path: pathlib.Path | None = None, embedder=None) -> None:
        """``embedder``: the process-wide one unless given (a benchmark comparing runtimes passes each)."""
        # One file per data set and runtime: concurrent benchmark processes never overwrite each
        # other's vectors, and one runtime's vectors never stand in for another's.
        self._embedder = embedder or get_embedder()
        suffix = f"-{namespace}" if namespace else ""
        runtime = getattr(self._embedder, "runtime", "torch")
        # A quantised file's scope is part of its vectors' identity ("int8-smooth-<digest>"): another int8 file's
        # cached vectors must never stand in for it. fp32 keeps the runtime's name alone.
        precision = str(getattr(self._embedder, "identity", "/fp32")).rsplit("/", 1)[-1]
        tag = runtime if precision == "fp32" else f"{runtime}-{precision}"
        if precision != "fp32":  # int8 vectors move with their pass neighbours (services/models/settings.py)
            tag += f"-b{getattr(self._embedder, 'batch_size', 1)}"
        self._path = path or CACHE_DIR / f"{MODEL_NAME}-{WEIGHTS_SHA256[:12]}-{tag}{suffix}.npz"
        self._vectors: dict[str, np.ndarray] = {}
        self._dirty = False
        self._unsaved = 0
        if self._path.exists():
            with np.load(self._path) as data:
                keys, matrix = data["keys"], data["vectors"]
            self._vectors = {str(k): v for k, v in zip(keys, matrix, strict=True)}

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def encode(self, texts: list[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        missing = list(dict.fromkeys((k, t) for k, t in zip(keys, texts, strict=True) if k not in self._vectors))
        if missing:
            fresh = self._embedder.encode([t for _, t in missing])
            for (key, _), vector in zip(missing, fresh, strict=True):
                self._vectors[key] = vector
            self._dirty = True
            self._unsaved += len(missing)
            if self._unsaved >= self.SAVE_EVERY:  # long first runs keep their progress
                self.save()
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self._vectors[k] for k in keys])

    def save(self) -> None:
        if not self._dirty:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._vectors), dtype="U32")
        matrix = np.stack(list(self._vectors.values())).astype(np.float32)
        tmp = self._path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vectors=matrix)
        tmp.replace(self._path)
        self._dirty = False
        self._unsaved = 0


@dataclass(frozen=True)
class IndexedDocument:
    key: str
    """The benchmark's own id (SciFact doc id, SQuAD article title)."""
    document_id: str
    text: str


class BenchCorpus:
    """Documents indexed for one tenant in a throwaway data directory."""

    TENANT = "bench"

    def __init__(self, encoder: DiskCachedEncoder, root: pathlib.Path | None = None, storage=None) -> None:
        """``storage`` (``StorageSettings``): the postgres backend's stores instead of the embedded ones."""
        self._tmp = None if root else tempfile.TemporaryDirectory(prefix="docuthinker-bench-")
        self.root = root or pathlib.Path(self._tmp.name)
        settings = RagSettings()
        self.chunker = ChunkerConfig(settings.chunk_size, settings.chunk_overlap)
        self.encoder = encoder
        if storage is not None and storage.postgres:
            from services.rag.runtime import open_postgres_stores

            self.metadata, _, _, _, self.index = open_postgres_stores(self.root, storage, MODEL_NAME, 384)
        else:
            self.metadata = MetadataStore(self.root / "metadata.sqlite3")
            vectors = VectorStore(self.root / "chroma", MODEL_NAME, 384)
            self.index = ChunkIndex(self.metadata, vectors, KeywordIndex(self.root / "bm25", self.metadata))
        self.documents: dict[str, IndexedDocument] = {}
        self.by_document_id: dict[str, IndexedDocument] = {}
        self.chunk_count = 0
        self.index_seconds = 0.0

    def add(self, items: Iterable[tuple[str, str]], batch: int = 256) -> None:
        """Indexes (key, text) pairs; embeds in batches across documents."""
        started = time.perf_counter()
        pending: list[tuple[DocumentRecord, Section, list[Chunk]]] = []
        for key, text in items:
            pending.append(self._prepare(key, text))
            if sum(len(c) for _, _, c in pending) >= batch:
                self._flush(pending)
                pending = []
        self._flush(pending)
        self.index.keyword.refresh(self.TENANT)
        self.encoder.save()
        self.index_seconds += time.perf_counter() - started

    def _prepare(self, key: str, text: str) -> tuple[DocumentRecord, Section, list[Chunk]]:
        sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
        document_id = document_id_for(self.TENANT, sha)
        now = time.time()
        record = DocumentRecord(
            document_id=document_id, tenant=self.TENANT, filename=f"{key[:80]}.txt", file_type="text",
            content_type="text/plain", content_sha256=sha, size_bytes=len(text.encode()), status=DocumentStatus.PENDING,
            create_time=now, update_time=now,
        )
        section = Section(text=text)
        chunks = [
            Chunk(
                chunk_id=chunk_id_for(self.TENANT, sha, position),
                tenant=self.TENANT,
                ordinal=position,
                text=text[span.start : span.end],
                provenance=Provenance(document_id, record.filename, section.page, "", span.row_start, span.row_end,
                                      (), span.start, span.end, span.section_index),
            )
            for position, span in enumerate(chunk_sections([section], self.chunker))
        ]
        doc = IndexedDocument(key, document_id, text)
        self.documents[key] = doc
        self.by_document_id[document_id] = doc
        return record, section, chunks

    def _flush(self, pending: Sequence[tuple[DocumentRecord, Section, list[Chunk]]]) -> None:
        if not pending:
            return
        vectors = self.encoder.encode([c.text for _, _, chunks in pending for c in chunks])
        row = 0
        for record, section, chunks in pending:
            self.metadata.upsert_document(record)
            self.index.stage_vectors(self.TENANT, record.document_id, chunks, vectors[row : row + len(chunks)])
            self.index.publish(record, [section], chunks, GraphSyncState.DISABLED)
            row += len(chunks)
            self.chunk_count += len(chunks)

    def close(self) -> None:
        self.encoder.save()
        self.metadata.close()
        if self._tmp is not None:
            self._tmp.cleanup()
