"""Storage settings shared by every service: which backend holds state, and how to reach PostgreSQL."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class StorageSettings(BaseSettings):
    """``embedded`` keeps each service's own files under the data directory (one replica per
    directory); ``postgres`` keeps all shared state in one PostgreSQL 15+ database with pgvector,
    so several replicas of a service see the same documents, vectors, budgets and dead letters."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_", frozen=True, extra="ignore")

    store_backend: Literal["embedded", "postgres"] = "embedded"
    """Where the RAG and orchestrator state lives: ``embedded`` (SQLite, vector log, FAISS, BM25 files) or
    ``postgres`` (one PostgreSQL database with the pgvector extension)."""
    postgres_dsn: SecretStr = SecretStr("")
    """libpq connection string or URI of that database (required with ``postgres``), e.g.
    ``postgresql://docuthinker:PASSWORD@db.example.com:5432/docuthinker?sslmode=require``."""
    postgres_pool_size: int = Field(default=8, ge=1, le=256)
    """Connections one process may hold open to PostgreSQL."""
    postgres_hnsw_ef_search: int = Field(default=100, ge=10, le=1000)
    """Candidates the HNSW vector index visits per search (pgvector ``hnsw.ef_search``); at least
    twice the depth asked for is used. Higher: closer to exact search, slower."""
    postgres_outbox_lease_s: float = Field(default=300.0, gt=0)
    """How long a graph-sync worker owns an outbox entry it claimed; a worker that dies holding one
    leaves it to another replica once this has passed."""
    postgres_keyword: Literal["bm25", "fts"] = "bm25"
    """Keyword search with ``postgres``: ``bm25`` keeps the embedded BM25 index in each replica as a cache
    rebuilt from the database when a tenant's chunks change; ``fts`` is PostgreSQL full text, always current
    with nothing to rebuild. Default ``bm25``: the embedded ranking, where ``fts`` ranks lower and is slow on large
    tenants (bench/results/pg-2026-12-02.json)."""
    postgres_blobs: Literal["database", "filesystem"] = "database"
    """Where original uploads go with ``postgres``: a ``bytea`` table (shared by every replica) or
    ``<data_dir>/rag/originals`` (only for a single replica, or a shared volume)."""

    @property
    def postgres(self) -> bool:
        return self.store_backend == "postgres"

    def dsn(self) -> str:
        value = self.postgres_dsn.get_secret_value()
        if self.postgres and not value:
            raise ValueError("DOCUTHINKER_STORE_BACKEND=postgres needs DOCUTHINKER_POSTGRES_DSN")
        return value

