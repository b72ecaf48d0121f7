"""Settings of the graph service, read from ``DOCUTHINKER_GRAPH_*`` and ``DOCUTHINKER_NEO4J_*`` variables."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class GraphSettings(BaseSettings):
    """Backend choice, query limits and upsert batching of the knowledge graph."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_GRAPH_", frozen=True, extra="ignore")

    backend: Literal["ladybug", "neo4j"] = "ladybug"
    """``ladybug``: embedded LadybugDB under DOCUTHINKER_DATA_DIR/graph; ``neo4j``: a Bolt server (Neo4j, ArcadeDB)."""
    query_timeout_s: float = Field(default=10.0, gt=0)
    """Longest a user Cypher query (QueryGraph) may run; the caller's deadline shortens it."""
    query_default_rows: int = Field(default=1000, ge=1)
    """Rows QueryGraph returns when the request sets no limit."""
    query_max_rows: int = Field(default=10_000, ge=1)
    """Most rows QueryGraph ever returns; larger requested limits are capped."""
    query_max_chars: int = Field(default=20_000, ge=100)
    """Longest Cypher text QueryGraph accepts."""
    query_max_range_items: int = Field(default=1_000_000, ge=1)
    """Most items the ``range()`` calls of one query may generate (nested ranges multiply); more is INVALID_ARGUMENT."""
    query_max_value_items: int = Field(default=1_000_000, ge=1)
    """Largest value one expression of a query may build, bounded on the parsed query before it runs
    (``query_sizes``: list items and string characters, nested ones included; ``+`` chains, splits, repeats,
    comprehensions); more is INVALID_ARGUMENT ``QUERY_TOO_LARGE``."""
    query_memory_mb: int = Field(default=800, ge=0)
    """Growth of the graph process's resident memory (over what it held when the store opened, ~150 MB for the
    graph service) past which the user queries running are interrupted and refused (``QUERY_TOO_LARGE``),
    LadybugDB only; 0: not watched."""
    query_concurrency: int = Field(default=2, ge=1)
    """User queries run at once per graph process; others wait (within their deadline) for a free slot."""
    query_threads: int = Field(default=1, ge=1)
    """Engine threads one user query may use (LadybugDB), so a heavy query leaves cores for the rest."""
    upsert_batch_facts: int = Field(default=2_000, ge=1)
    """Upsert streams are written in transactions of about this many facts (whole documents)."""
    max_facts_per_document: int = Field(default=10_000, ge=1)
    """Most topics plus entities one document may carry in an upsert."""
    ladybug_buffer_pool_mb: int = Field(default=64, ge=8)
    """Buffer pool of each tenant's LadybugDB database."""
    ladybug_max_db_gb: int = Field(default=64, ge=1)
    """Address space reserved per tenant database (LadybugDB maps 8 TB by default, too much for many tenants)."""
    ladybug_max_open: int = Field(default=32, ge=1)
    """Tenant databases kept open at once; the least recently used idle one is closed beyond this."""


class Neo4jSettings(BaseSettings):
    """Connection to a Bolt server, used when DOCUTHINKER_GRAPH_BACKEND=neo4j."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_NEO4J_", frozen=True, extra="ignore")

    uri: str = "bolt://127.0.0.1:7687"
    """Bolt URI (bolt://, neo4j://, bolt+s://, neo4j+s://)."""
    user: str = "neo4j"
    """Bolt user name."""
    password: SecretStr = SecretStr("")
    """Bolt password (kept secret in logs and dumps)."""
    tenancy: Literal["database", "shared"] = "database"
    """``database``: one database per tenant (user Cypher allowed); ``shared``: one database, tenant property only
    (user Cypher refused: a shared database cannot confine arbitrary Cypher to one tenant)."""
    database: str = "neo4j"
    """The database in ``shared`` tenancy."""
    database_prefix: str = "dt-"
    """Prefix of per-tenant database names in ``database`` tenancy."""
    provision: Literal["cypher", "arcadedb", "none"] = "cypher"
    """How a missing tenant database is created: ``CREATE DATABASE`` on ``system`` (Neo4j Enterprise), ArcadeDB's
    HTTP server command (needs ``admin_url``), or ``none`` (operators create them beforehand)."""
    admin_url: str = ""
    """ArcadeDB HTTP endpoint (e.g. http://127.0.0.1:2480) for ``provision=arcadedb``."""
    connect_timeout_s: float = Field(default=5.0, gt=0)
    """TCP/Bolt connection timeout; an unreachable server becomes UNAVAILABLE after this."""
    max_pool_size: int = Field(default=32, ge=1)
    """Most Bolt connections the driver keeps open."""
