"""The orchestrator's database on PostgreSQL: the same small interface as ``Database``, shared by replicas.

The stores' statements are written once, in the SQL both engines accept, with ``?`` parameters
(rewritten here to psycopg's ``%s``). Their ``CREATE TABLE IF NOT EXISTS`` scripts are for the
embedded database only: on PostgreSQL the schema is the versioned migrations'
(``services/storage/migrations``), applied when the pool opens, so ``script`` does nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from services.storage.postgres import Postgres


def _sql(statement: str) -> str:
    return statement.replace("%", "%%").replace("?", "%s")


class _Connection:
    """What a store's ``transaction()`` block calls: ``execute`` returning a cursor."""

    def __init__(self, conn) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Iterable[Any] = ()):
        return self._conn.execute(_sql(sql), tuple(params))


class PostgresDatabase:
    embedded = False

    def __init__(self, db: Postgres) -> None:
        self._db = db
        self.path = "postgres"

    def script(self, sql: str) -> None:
        """The embedded schema: PostgreSQL's comes from the migrations (see the module doc)."""

    def execute(self, sql: str, params: Iterable[Any] = ()) -> int:
        with self._db.connection() as conn:
            return conn.execute(_sql(sql), tuple(params)).rowcount

    def query(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        with self._db.connection() as conn:
            return conn.execute(_sql(sql), tuple(params)).fetchall()

    def one(self, sql: str, params: Iterable[Any] = ()) -> dict[str, Any] | None:
        with self._db.connection() as conn:
            return conn.execute(_sql(sql), tuple(params)).fetchone()

    @contextmanager
    def transaction(self) -> Iterator[_Connection]:
        with self._db.connection() as conn:
            yield _Connection(conn)

    def close(self) -> None:
        """The pool is the process's, shared with its other stores: left open."""
