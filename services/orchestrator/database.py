"""The orchestrator's SQLite database: one WAL file under ``<data_dir>/orchestrator``.

Every store (circuits, costs, dead letters, conversations, document insights) keeps its
state here so that a restart loses nothing. Statements are short and local, so they run
on the caller's thread under one lock rather than through a thread pool. With
``DOCUTHINKER_STORE_BACKEND=postgres`` the same stores run on ``pg_database.PostgresDatabase``
(``open_database`` chooses), which several orchestrator replicas share.
"""

from __future__ import annotations

import pathlib
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from services.storage.settings import StorageSettings

FILENAME = "orchestrator.db"


class SqlDatabase(Protocol):
    """What the stores use: ``Database`` (SQLite) and ``PostgresDatabase`` both are one."""

    embedded: bool

    def script(self, sql: str) -> None: ...
    def execute(self, sql: str, params: Iterable[Any] = ()) -> int: ...
    def query(self, sql: str, params: Iterable[Any] = ()) -> list[Any]: ...
    def one(self, sql: str, params: Iterable[Any] = ()) -> Any | None: ...
    def transaction(self) -> Any: ...
    def close(self) -> None: ...


def open_database(data_dir: pathlib.Path, storage: StorageSettings) -> SqlDatabase:
    if storage.postgres:
        from services.orchestrator.pg_database import PostgresDatabase
        from services.storage.postgres import shared

        return PostgresDatabase(shared(storage.dsn(), storage.postgres_pool_size))
    return Database.in_data_dir(data_dir)


class Database:
    embedded = True

    def __init__(self, path: pathlib.Path | str) -> None:
        if str(path) != ":memory:":
            pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=5000")
        self._lock = threading.RLock()

    @classmethod
    def in_data_dir(cls, data_dir: pathlib.Path) -> Database:
        return cls(pathlib.Path(data_dir) / "orchestrator" / FILENAME)

    def script(self, sql: str) -> None:
        with self._lock:
            self._conn.executescript(sql)

    def execute(self, sql: str, params: Iterable[Any] = ()) -> int:
        """Runs one statement; returns the number of rows changed."""
        with self._lock:
            return self._conn.execute(sql, tuple(params)).rowcount

    def query(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, tuple(params)).fetchall()

    def one(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        with self._lock:
            return self._conn.execute(sql, tuple(params)).fetchone()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; statements inside use the yielded connection."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
