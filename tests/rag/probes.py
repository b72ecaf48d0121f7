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



def vectors_held(runtime: RagRuntime, tenant: str) -> dict[str, int]:
    """Vectors the tenant has in each vector store (Chroma and FAISS; on PostgreSQL its one table)."""
    held = {"stored": len(runtime.vectors.stored_ids(tenant))}
    if hasattr(runtime.vectors, "faiss_count"):
        held["faiss"] = runtime.vectors.faiss_count(tenant)
    return held


def blobs_held(runtime: RagRuntime, tenant: str) -> int:
    """Original uploads stored for the tenant (files; on PostgreSQL rows of ``rag_blobs``)."""
    if hasattr(runtime.blobs, "path"):
        return sum(p.is_file() for p in runtime.blobs.path(tenant, "00").parents[1].rglob("*"))
    with runtime.blobs._db.connection() as conn:
        return conn.execute("SELECT count(*) AS n FROM rag_blobs WHERE tenant = %s", (tenant,)).fetchone()["n"]
