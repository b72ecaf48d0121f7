"""The seeds' own RAG approach, rebuilt as a plain script for the baseline comparison.

What the seed projects did: LangChain's ``RecursiveCharacterTextSplitter`` (chunk_size 900,
chunk_overlap 120, its default separators), Chroma as the only index (an in-process
``PersistentClient``, cosine HNSW), all-MiniLM-L6-v2 embeddings, and dense top-k retrieval,
nothing else (no keyword index, no fusion). The embeddings come from the same production
embedder DocuThinker uses (``services.models.embedder``), handed to Chroma directly, which is
what LangChain's Chroma wrapper does with an embedding function; so the comparison isolates
chunking, indexing and retrieval, not the model.
"""

from __future__ import annotations

import functools
import pathlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

CHUNK_SIZE = 900
CHUNK_OVERLAP = 120

Encode = Callable[[list[str]], np.ndarray]


@functools.lru_cache(maxsize=1)
def seed_encode() -> Encode:
    """How the seeds embedded: sentence-transformers' ``encode`` of the packaged MiniLM in batches of 32
    (DocuThinker's default runtime is ONNX, so this is its own PyTorch model)."""
    from services.models.embedder import build_embedder

    model = build_embedder(runtime="torch").sentence_transformer

    def encode(texts: list[str]) -> np.ndarray:
        return model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False)

    return encode


@dataclass(frozen=True)
class SeedHit:
    document_key: str
    chunk_id: str
    distance: float


class SeedPipeline:
    """Split -> embed -> Chroma add, one document at a time; dense top-k search."""

    def __init__(self, root: pathlib.Path, encode: Encode) -> None:
        import chromadb
        from chromadb.config import Settings
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        self._encode = encode
        self._splitter = RecursiveCharacterTextSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP)
        self._client = chromadb.PersistentClient(path=str(root), settings=Settings(anonymized_telemetry=False))
        self._collection = self._client.get_or_create_collection(
            "seed", embedding_function=None, metadata={"hnsw:space": "cosine"})
        self.chunks = 0

    def split(self, text: str) -> list[str]:
        return self._splitter.split_text(text)

    def ingest(self, key: str, text: str) -> int:
        """Indexes one document; returns its chunk count."""
        pieces = self.split(text)
        if not pieces:
            return 0
        vectors = self._encode(pieces)
        self._collection.add(
            ids=[f"{key}#{i}" for i in range(len(pieces))],
            embeddings=vectors,
            documents=pieces,
            metadatas=[{"document": key}] * len(pieces),
        )
        self.chunks += len(pieces)
        return len(pieces)

    def search(self, query_vector: np.ndarray, k: int) -> list[SeedHit]:
        reply = self._collection.query(query_embeddings=[np.asarray(query_vector, dtype=np.float32)],
                                       n_results=k, include=["metadatas", "distances"])
        return [SeedHit(str(meta["document"]), chunk_id, float(distance))
                for chunk_id, meta, distance in zip(reply["ids"][0], reply["metadatas"][0], reply["distances"][0],
                                                    strict=True)]

    def ranked_documents(self, query_vector: np.ndarray, k: int) -> list[str]:
        """Top-k documents by their best chunk, asking for 2k chunks (as bench.scifact does for DocuThinker)."""
        hits = self.search(query_vector, min(2 * k, max(self.chunks, 1)))
        return list(dict.fromkeys(h.document_key for h in hits))[:k]
