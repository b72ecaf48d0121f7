"""Small fakes at the retrieval port's boundary (unit tests only; integration tests use the real store)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from services.rag.documents import Chunk
from tests.support import records
from tests.support.embedders import HashEmbedder

_WORD = re.compile(r"[a-z0-9]+")


def HashingEncoder() -> HashEmbedder:
    """Bag-of-words vectors (hashed, 256 buckets): texts sharing words are similar; deterministic and instant."""
    return HashEmbedder(dimension=256)


def make_chunk(tenant: str, document_id: str, text: str, ordinal: int = 0, filename: str = "doc.txt",
               page: int = 1, char_start: int = 0) -> Chunk:
    return records.chunk(text, tenant=tenant, document_id=document_id, ordinal=ordinal, filename=filename, page=page,
                         char_start=char_start)


class FakeIndex:
    """Brute-force dense and keyword search over in-memory chunks, scoped by tenant like the real one."""

    def __init__(self, chunks: Sequence[Chunk], encoder: HashingEncoder | None = None) -> None:
        self.encoder = encoder or HashingEncoder()
        self.chunks = {c.chunk_id: c for c in chunks}
        self.vectors = {c.chunk_id: self.encoder.encode([c.text])[0] for c in chunks}
        self.calls: list[tuple[str, str, int, tuple[str, ...] | None]] = []

    def _candidates(self, tenant: str, document_ids: Sequence[str] | None) -> list[Chunk]:
        return [c for c in self.chunks.values()
                if c.tenant == tenant and (not document_ids or c.document_id in document_ids)]

    def dense_search(self, tenant, query_vector, k, document_ids=None):
        self.calls.append(("dense", tenant, k, tuple(document_ids) if document_ids else None))
        scored = [(c.chunk_id, float(self.vectors[c.chunk_id] @ query_vector)) for c in self._candidates(tenant, document_ids)]
        return sorted(scored, key=lambda x: -x[1])[:k]

    def keyword_search(self, tenant, query, k, document_ids=None):
        self.calls.append(("keyword", tenant, k, tuple(document_ids) if document_ids else None))
        words = set(_WORD.findall(query.lower()))
        scored = []
        for c in self._candidates(tenant, document_ids):
            overlap = len(words & set(_WORD.findall(c.text.lower())))
            if overlap:
                scored.append((c.chunk_id, float(overlap)))
        return sorted(scored, key=lambda x: -x[1])[:k]

    def get_chunks(self, tenant, ids):
        return [self.chunks[i] for i in ids if i in self.chunks and self.chunks[i].tenant == tenant]
