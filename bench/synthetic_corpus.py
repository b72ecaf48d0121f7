"""Corpora of 1k to 100k chunks for the serving benchmark, written through the production store API.

Embedding 100k chunks for real would take about an hour on two cores, so only a base pool
is embedded for real, and the rest is recombined from it:

1. base pool: ``base_chunks`` real chunks of SciFact abstracts (title + " " + text), cut by
   the production chunker, embedded by the production MiniLM model (cached on disk by text
   hash under data/bench-cache, so later runs skip this);
2. every corpus starts with the base chunks as they are; each further chunk takes the
   sentences of one base chunk ``a``, one or two sentences of another ``b`` and one sentence
   of any other SciFact abstract (cut to the chunk size), and its vector is
   ``normalise(0.75 v_a + 0.25 v_b + noise)`` (noise N(0, 0.02) per dimension): real
   vocabulary for BM25, vectors close to most of the text they stand for, no two vectors
   identical, and enough distinct sentences that answering (which embeds and caches the
   sentences of the chunks it retrieved) does not find them all cached;
3. chunks are grouped 500 to a document (one vector-log write each)
   and written as ingestion writes them:
   ``MetadataStore.upsert_document``, ``ChunkIndex.stage_vectors`` (vector log + FAISS), then
   ``ChunkIndex.publish`` (the SQLite commit), then the tenant's BM25 index is built.

Only the encoder is bypassed: searches read the same vector-log/FAISS/SQLite/bm25s stores through
``ChunkIndex`` as the service does. The directory is laid out as ``RagRuntime`` expects
(``<data_dir>/rag/...``), so a real rag process started on it serves the same corpora.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import pathlib
import random
import re
import time
from dataclasses import dataclass

import numpy as np

from bench.corpus import DiskCachedEncoder
from bench.shared import SHARED
from services.models.embedder import DIMENSION, MODEL_NAME, identity
from services.models.settings import embedder_settings
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
from services.rag.runtime import metadata_path
from services.rag.settings import RagSettings
from services.rag.store import ChunkIndex, KeywordIndex, MetadataStore, VectorStore

SCIFACT = SHARED / "data" / "scifact"
CHUNKS_PER_DOCUMENT = 500
SEPARATOR = "\n\n"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")


@dataclass(frozen=True)
class BasePool:
    texts: tuple[str, ...]
    vectors: np.ndarray
    """(len(texts), 384) float32, L2-normalised, from the production embedder."""
    filler: tuple[str, ...] = ()
    """Sentences of the abstracts outside the pool (text only, never embedded)."""


def base_pool(size: int, seed: int = 11, data: pathlib.Path = SCIFACT) -> BasePool:
    """The first ``size`` chunks of seeded-shuffled SciFact abstracts, embedded for real (cached)."""
    with gzip.open(data / "corpus.jsonl.gz", "rt") as fh:
        abstracts = [(d["title"] + " " + d["text"]).strip() for d in map(json.loads, fh)]
    random.Random(seed).shuffle(abstracts)
    settings = RagSettings()
    chunker = ChunkerConfig(settings.chunk_size, settings.chunk_overlap)
    texts: list[str] = []
    consumed = 0
    for abstract in abstracts:
        consumed += 1
        section = Section(text=abstract)
        texts += [abstract[s.start : s.end] for s in chunk_sections([section], chunker)]
        if len(texts) >= size:
            break
    texts = texts[:size]
    filler = tuple(s for a in abstracts[consumed:] for s in _SENTENCE_END.split(a))
    encoder = DiskCachedEncoder("serving")
    vectors = encoder.encode(texts)
    encoder.save()
    return BasePool(tuple(texts), vectors, filler)


def synthetic_chunks(pool: BasePool, count: int, seed: int, max_chars: int) -> tuple[list[str], np.ndarray]:
    """``count`` chunk texts and vectors: the pool itself first, then recombinations of it."""
    rng = np.random.default_rng(seed)
    sentences = [_SENTENCE_END.split(t) for t in pool.texts]
    take = min(count, len(pool.texts))
    texts = list(pool.texts[:take])
    vectors = np.empty((count, DIMENSION), dtype=np.float32)
    vectors[:take] = pool.vectors[:take]
    extra = count - take
    if extra:
        primary = rng.integers(0, len(pool.texts), extra)
        secondary = rng.integers(0, len(pool.texts), extra)
        filler = rng.integers(0, max(len(pool.filler), 1), extra)
        for a, b, f in zip(primary, secondary, filler, strict=True):
            borrowed = sentences[b][: int(rng.integers(1, 3))]
            other = [pool.filler[f]] if pool.filler else []
            texts.append(" ".join([*sentences[a], *borrowed, *other])[:max_chars])
        mixed = 0.75 * pool.vectors[primary] + 0.25 * pool.vectors[secondary]
        mixed += rng.normal(0.0, 0.02, mixed.shape).astype(np.float32)
        mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
        vectors[take:] = mixed
    return texts, vectors


class CorpusWriter:
    """The production stores of ``<data_dir>/rag``, opened in this process to write corpora."""

    def __init__(self, data_dir: pathlib.Path, hnsw_threshold: int = RagSettings().hnsw_threshold) -> None:
        """``hnsw_threshold``: above the corpus size, the writer's own FAISS index stays exact (a
        benchmark that places a prebuilt HNSW snapshot skips building the graph twice)."""
        root = pathlib.Path(data_dir) / "rag"
        self.metadata = MetadataStore(metadata_path(data_dir))
        # Stamped as the runtime the services will embed queries with, or rag refuses the index at start.
        self.vectors = VectorStore(root / "chroma", MODEL_NAME, DIMENSION, identity=identity(embedder_settings().runtime),
                                   hnsw_threshold=hnsw_threshold)
        self.keyword = KeywordIndex(root / "bm25", self.metadata)
        self.index = ChunkIndex(self.metadata, self.vectors, self.keyword)

    def write(self, tenant: str, texts: list[str], vectors: np.ndarray) -> dict[str, float]:
        """Writes the chunks as documents of ``CHUNKS_PER_DOCUMENT``; returns what it took."""
        started = time.perf_counter()
        documents = 0
        for start in range(0, len(texts), CHUNKS_PER_DOCUMENT):
            part = texts[start : start + CHUNKS_PER_DOCUMENT]
            record, section, chunks = _document(tenant, start // CHUNKS_PER_DOCUMENT, part)
            self.metadata.upsert_document(record)
            self.index.stage_vectors(tenant, record.document_id, chunks, vectors[start : start + len(part)])
            self.index.publish(record, [section], chunks, GraphSyncState.DISABLED)
            documents += 1
        stored = time.perf_counter()
        self.keyword.refresh(tenant)
        return {"chunks": len(texts), "documents": documents, "store_seconds": round(stored - started, 2),
                "bm25_seconds": round(time.perf_counter() - stored, 2)}

    def close(self) -> None:
        self.metadata.close()


def chunk_ids(tenant: str, texts: list[str]) -> list[str]:
    """The chunk ids ``CorpusWriter.write`` gives these texts (they are deterministic)."""
    return [c.chunk_id for start in range(0, len(texts), CHUNKS_PER_DOCUMENT)
            for c in _document(tenant, start // CHUNKS_PER_DOCUMENT, texts[start : start + CHUNKS_PER_DOCUMENT])[2]]


def _document(tenant: str, number: int, texts: list[str]) -> tuple[DocumentRecord, Section, list[Chunk]]:
    body = SEPARATOR.join(texts)
    sha = hashlib.sha256(body.encode("utf-8")).hexdigest()
    document_id = document_id_for(tenant, sha)
    filename = f"synthetic-{number:05d}.txt"
    now = time.time()
    record = DocumentRecord(
        document_id=document_id, tenant=tenant, filename=filename, file_type="text", content_type="text/plain",
        content_sha256=sha, size_bytes=len(body.encode("utf-8")), status=DocumentStatus.PENDING,
        create_time=now, update_time=now, title=f"Synthetic document {number}",
    )
    chunks, offset = [], 0
    for position, text in enumerate(texts):
        provenance = Provenance(document_id, filename, 0, "", 0, 0, (), offset, offset + len(text), 0)
        chunks.append(Chunk(chunk_id_for(tenant, sha, position), tenant, position, text, provenance))
        offset += len(text) + len(SEPARATOR)
    return record, Section(text=body), chunks
