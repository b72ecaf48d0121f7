"""Connections to the shared PostgreSQL database and its versioned schema.

Migrations are the numbered ``migrations/NNNN_name.sql`` files of this package, applied in order
at startup, each in its own transaction and recorded in ``schema_migrations``. They run under a
session advisory lock, so replicas starting at the same moment apply each migration once: the
others wait on the lock, then find it recorded. A database ahead of this code (a newer version
recorded) is left alone, so a rolling upgrade can run old and new replicas side by side as long
as migrations only add.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from services.runtime.errors import Unavailable

log = logging.getLogger("docuthinker.storage")

MIGRATION_LOCK = 0x646F6375  # "docu": the advisory lock key every replica takes to migrate
CONNECT_TIMEOUT_S = 5
"""A new connection to a server that does not answer (stopped, cut off) gives up after this long."""
CLIENT: dict[str, Any] = {"client_encoding": "UTF8"}
"""Text travels as UTF-8 whatever the database's encoding: on a SQL_ASCII database the driver would otherwise
hand back bytes for text columns (a database made by an old ``initdb`` under the C locale)."""
ACQUIRE_TIMEOUT_S = 10.0
"""The longest a request waits for a pooled connection (every one busy, or the server not answering) before it
fails UNAVAILABLE."""
BUSY_POOL_S = 1.0
"""After this long without a pooled connection, one direct connection tells a busy pool (keep waiting) from a
database that is away (fail now): a stopped server refuses at once, and waiting out ACQUIRE_TIMEOUT_S then
cost each request 10 s, 30 s through Envoy's retries."""
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations() -> list[Migration]:
    found = []
    for entry in importlib.resources.files("services.storage.migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two migrations share a version: {versions}")
    return found


@contextlib.contextmanager
def advisory_lock(dsn: str, key: int) -> Iterator[psycopg.Connection]:
    """A session advisory lock, held on a connection of its own (not a pooled one: the holder's work
    may need every connection of the pool) until the block ends; the block may use the connection."""
    with psycopg.connect(dsn, autocommit=True, client_encoding=CLIENT["client_encoding"]) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        try:
            yield conn
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


def migrate(dsn: str) -> list[int]:
    """Applies the migrations this database lacks; returns the versions applied now."""
    applied_now: list[int] = []
    with advisory_lock(dsn, MIGRATION_LOCK) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        for migration in migrations():
            if migration.version in done:
                continue
            with conn.transaction():
                conn.execute(migration.sql)
                conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                             (migration.version, migration.name))
            applied_now.append(migration.version)
            log.info("schema migration applied", extra={"fields": {"version": migration.version,
                                                                   "name": migration.name}})
    return applied_now


def _configure(conn: psycopg.Connection) -> None:
    register_vector(conn)


class Postgres:
    """One process's pool on the shared database (thread-safe; blocking calls, run them in a thread).

    Opening applies the migrations first. Connections return rows as dicts; pgvector's adapter is
    registered on each, so numpy vectors go in and out as ``vector`` values.
    """

    def __init__(self, dsn: str, pool_size: int = 8) -> None:
        self.dsn = dsn
        migrate(dsn)
        # check: a connection is tested as it leaves the pool, so a server restart or a managed
        # failover costs a reconnect rather than a failed request.
        self.pool = ConnectionPool(
            dsn, min_size=1, max_size=pool_size, timeout=ACQUIRE_TIMEOUT_S,
            kwargs={"row_factory": dict_row, "connect_timeout": CONNECT_TIMEOUT_S, **CLIENT}, configure=_configure,
            check=ConnectionPool.check_connection, open=True, name="docuthinker",
        )
        self.pool.wait(timeout=30)

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:  # a psycopg Connection whose rows are dicts
        """A pooled connection as a context manager: its block is one transaction (commit on success).

        The database being away (refusing a direct connection once the pool has none for ``BUSY_POOL_S``, no
        connection within ``ACQUIRE_TIMEOUT_S``, or one lost mid-block) is
        UNAVAILABLE with reason DATABASE_UNAVAILABLE, which callers may retry, never an internal error."""
        try:
            with contextlib.ExitStack() as stack:
                try:
                    conn = stack.enter_context(self.pool.connection(timeout=BUSY_POOL_S))
                except PoolTimeout:
                    self._reach()
                    conn = stack.enter_context(self.pool.connection(timeout=ACQUIRE_TIMEOUT_S - BUSY_POOL_S))
                yield conn
        except (psycopg.OperationalError, PoolTimeout) as exc:
            # The driver's words name the server's socket or host: the log keeps them, the caller gets none.
            log.warning("database unavailable", extra={"fields": {"error": str(exc)}})
            raise Unavailable("the database is unavailable; retry later", reason="DATABASE_UNAVAILABLE") from exc

    def _reach(self) -> None:
        """Raises OperationalError when the server cannot be reached (refused, socket gone, no answer within
        CONNECT_TIMEOUT_S); returns when it can, the pool then being merely busy."""
        psycopg.connect(self.dsn, connect_timeout=CONNECT_TIMEOUT_S, **CLIENT).close()

    def close(self) -> None:
        self.pool.close()


_shared: dict[str, Postgres] = {}
_shared_lock = threading.Lock()


def close_shared(dsn: str | None = None) -> None:
    """Closes the process's pool on one database (None: on every database)."""
    with _shared_lock:
        for key in [dsn] if dsn is not None else list(_shared):
            db = _shared.pop(key, None)
            if db is not None:
                db.close()


def shared(dsn: str, pool_size: int = 8) -> Postgres:
    """One pool per database per process, shared by the stores that live in it."""
    with _shared_lock:
        db = _shared.get(dsn)
        if db is None or db.pool.closed:
            db = _shared[dsn] = Postgres(dsn, pool_size)
        return db
