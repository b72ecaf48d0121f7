"""Helpers that look inside the stores (what is visible, what each index still holds)."""

from __future__ import annotations

from services.rag.documents import vector_key
from services.rag.runtime import RagRuntime


async def collect(events) -> list:
    return [event async for event in events]


def held_by_each_store(runtime: RagRuntime, tenant: str, chunk_ids: list[str]) -> dict[str, int]:
    """How many of these chunks are visible, and held by each store (SQLite rows, Chroma, FAISS, BM25;
    on PostgreSQL: chunk rows, which carry the full-text index, and pgvector rows)."""
    if not hasattr(runtime.vectors, "has_key"):
        rows = runtime.metadata.known_chunk_ids()
        stored = set(runtime.vectors.stored_ids(tenant))
        visible = {c.chunk_id for c in runtime.metadata.get_chunks(tenant, chunk_ids)}
        return {
            "visible": sum(c in visible for c in chunk_ids),
            "rows": sum(c in rows for c in chunk_ids),
            "vectors": sum(c in stored for c in chunk_ids),
        }
    runtime.keyword.refresh(tenant)
    chroma = set(runtime.vectors.stored_ids(tenant))
    bm25 = set(runtime.keyword.indexed_ids(tenant)) | set(runtime.keyword.persisted_ids(tenant))
    rows = runtime.metadata.known_chunk_ids()
    visible = {c.chunk_id for c in runtime.metadata.get_chunks(tenant, chunk_ids)}
    return {
        "visible": sum(c in visible for c in chunk_ids),
        "sqlite": sum(c in rows for c in chunk_ids),
        "chroma": sum(c in chroma for c in chunk_ids),
        "faiss": sum(runtime.vectors.has_key(tenant, vector_key(c)) for c in chunk_ids),
        "bm25": sum(c in bm25 for c in chunk_ids),
    }

