"""Durable outbox of graph work: which documents the knowledge graph must (re)learn or forget.

A table in the RAG metadata database (``graph_outbox``, beside ``documents``), written through
its own connection. One row per document holds the latest intent, so a delete replaces (cancels)
a pending upsert and a re-index replaces a pending delete. Every enqueue takes a new
``sequence``; the worker's writes are guarded by the sequence it read, so work done for an
intent that was replaced meanwhile never completes the newer one. Rows leave the table only
when the worker completes them: a graph or NLP outage leaves them pending, with the attempt
count, last error and next attempt time (backoff), and a restart picks them up again.

Each intent keeps the trace context (W3C ``traceparent``) of the request that queued it, so the
worker's span continues that request's trace (``services.runtime.tracing.background``).

Completing an upsert marks the document SYNCED in the same transaction, and only if it is
still READY and PENDING, so a document never claims a sync of content it no longer has.
"""

from __future__ import annotations

import pathlib
import sqlite3
import threading
import time
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from services.rag.documents import DocumentStatus, GraphSyncState
from services.runtime import tracing

SCHEMA = """
CREATE TABLE IF NOT EXISTS graph_outbox (
    tenant TEXT NOT NULL,
    document_id TEXT NOT NULL,
    operation TEXT NOT NULL CHECK (operation IN ('upsert', 'delete')),
    sequence INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '',
    facts TEXT,
    enqueue_time REAL NOT NULL,
    next_attempt_time REAL NOT NULL,
    PRIMARY KEY (tenant, document_id)
);
CREATE INDEX IF NOT EXISTS graph_outbox_due ON graph_outbox (next_attempt_time, sequence);
"""
COLUMNS = ("tenant, document_id, operation, sequence, attempts, last_error, facts, enqueue_time, next_attempt_time, "
           "trace_context")
MAX_ERROR_CHARS = 2000


class Operation(str, Enum):
    UPSERT = "upsert"
    DELETE = "delete"


@dataclass(frozen=True)
class OutboxEntry:
    tenant: str
    document_id: str
    operation: Operation
    sequence: int
    attempts: int
    last_error: str
    facts: str | None
    """The extracted facts (JSON), kept once NLP succeeded so a graph outage does not redo NLP."""
    enqueue_time: float
    next_attempt_time: float
    trace_context: str | None = None
    """``traceparent`` of the request that queued the intent (None: tracing was off)."""


def entry_from_row(row) -> OutboxEntry:
    """From a row of either backend (anything indexable by column name)."""
    return OutboxEntry(
        tenant=row["tenant"], document_id=row["document_id"], operation=Operation(row["operation"]),
        sequence=row["sequence"], attempts=row["attempts"], last_error=row["last_error"], facts=row["facts"],
        enqueue_time=row["enqueue_time"], next_attempt_time=row["next_attempt_time"],
        trace_context=row["trace_context"],
    )


class Outbox(Protocol):
    """What the worker, the port and the metrics need: ``GraphOutbox`` (SQLite, one process) and
    ``pg_outbox.PostgresGraphOutbox`` (shared by replicas, with claims and leases) both are one."""

    def enqueue_upsert(self, tenant: str, document_id: str) -> int: ...
    def enqueue_delete(self, tenant: str, document_id: str) -> int: ...
    def depth(self) -> tuple[int, float | None]: ...
    def reconcile(self) -> int: ...
    def next_due(self, now: float | None = None) -> OutboxEntry | None: ...
    def next_attempt_time(self) -> float | None: ...
    def complete(self, entry: OutboxEntry, mark_synced: bool) -> bool: ...
    def retry_later(self, entry: OutboxEntry, error: str, delay_s: float) -> bool: ...
    def retry_now(self) -> int: ...
    def defer(self, entry: OutboxEntry, delay_s: float) -> bool: ...
    def save_facts(self, entry: OutboxEntry, facts: str) -> bool: ...
    def replace_operation(self, entry: OutboxEntry, operation: Operation) -> bool: ...
    def entries(self, tenant: str | None = None) -> list[OutboxEntry]: ...
    def get(self, tenant: str, document_id: str) -> OutboxEntry | None: ...
    def close(self) -> None: ...


class GraphOutbox:
    """Thread-safe (one connection, one lock); callers on the event loop use ``asyncio.to_thread``."""

    def __init__(self, path: pathlib.Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.Lock()
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            # As the metadata store: survives a process crash. An intent lost with the OS is queued again
            # by ``reconcile`` (its document stays READY and PENDING), so no fsync per enqueue.
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA busy_timeout=10000")
            self._conn.executescript(SCHEMA)
            columns = {row[1] for row in self._conn.execute("PRAGMA table_info(graph_outbox)")}
            if "trace_context" not in columns:  # a database from before tracing
                self._conn.execute("ALTER TABLE graph_outbox ADD COLUMN trace_context TEXT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _write(self, work):
        """Runs ``work(connection)`` in one IMMEDIATE transaction (waits for other writers)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            return result

    # -- intents ---------------------------------------------------------------------
    def enqueue_upsert(self, tenant: str, document_id: str) -> int:
        trace_context = tracing.current_traceparent()
        return self._write(lambda db: _put(db, tenant, document_id, Operation.UPSERT, time.time(), trace_context))

    def enqueue_delete(self, tenant: str, document_id: str) -> int:
        """Replaces any pending upsert of the document: its facts must leave the graph, not arrive."""
        trace_context = tracing.current_traceparent()
        return self._write(lambda db: _put(db, tenant, document_id, Operation.DELETE, time.time(), trace_context))

    def depth(self) -> tuple[int, float | None]:
        """How many intents wait, and the enqueue time of the oldest (None: empty)."""
        with self._lock:
            count, oldest = self._conn.execute("SELECT COUNT(*), MIN(enqueue_time) FROM graph_outbox").fetchone()
        return int(count), oldest

    def reconcile(self) -> int:
        """Queues READY documents that say PENDING but have no entry (a crash between publish and
        enqueue); returns how many."""
        def work(db: sqlite3.Connection) -> int:
            rows = db.execute(
                "SELECT d.tenant, d.document_id FROM documents d WHERE d.status=? AND d.graph_sync=? AND NOT EXISTS "
                "(SELECT 1 FROM graph_outbox o WHERE o.tenant=d.tenant AND o.document_id=d.document_id) "
                "ORDER BY d.update_time",
                (int(DocumentStatus.READY), int(GraphSyncState.PENDING)),
            ).fetchall()
            now = time.time()
            for tenant, document_id in rows:
                _put(db, tenant, document_id, Operation.UPSERT, now)
            return len(rows)

        return self._write(work)

    # -- the worker's side -----------------------------------------------------------
    def next_due(self, now: float | None = None) -> OutboxEntry | None:
        now = time.time() if now is None else now
        with self._lock:
            row = self._conn.execute(
                f"SELECT {COLUMNS} FROM graph_outbox WHERE next_attempt_time <= ? "
                "ORDER BY next_attempt_time, sequence LIMIT 1",
                (now,),
            ).fetchone()
        return entry_from_row(row) if row else None

    def next_attempt_time(self) -> float | None:
        """When the earliest entry falls due (None: the outbox is empty)."""
        with self._lock:
            return self._conn.execute("SELECT MIN(next_attempt_time) FROM graph_outbox").fetchone()[0]

    def complete(self, entry: OutboxEntry, mark_synced: bool) -> bool:
        """Removes the entry if it is still the one read; ``mark_synced`` also flips the document
        from PENDING to SYNCED (if still READY). False: the intent changed meanwhile, kept."""
        def work(db: sqlite3.Connection) -> bool:
            if not _remove_if_current(db, entry):
                return False
            if mark_synced:
                db.execute(
                    "UPDATE documents SET graph_sync=?, update_time=? "
                    "WHERE tenant=? AND document_id=? AND status=? AND graph_sync=?",
                    (int(GraphSyncState.SYNCED), time.time(), entry.tenant, entry.document_id,
                     int(DocumentStatus.READY), int(GraphSyncState.PENDING)),
                )
            return True

        return self._write(work)

    def retry_later(self, entry: OutboxEntry, error: str, delay_s: float) -> bool:
        """Records a failed attempt; the entry falls due again after ``delay_s``."""
        return self._update(entry, "attempts=attempts+1, last_error=?, next_attempt_time=?",
                            (error[:MAX_ERROR_CHARS], time.time() + delay_s))

    def retry_now(self) -> int:
        """Every entry waiting on a failure's backoff falls due now (its peers serve again)."""
        now = time.time()

        def work(db: sqlite3.Connection) -> int:
            return db.execute(
                "UPDATE graph_outbox SET next_attempt_time=? WHERE attempts > 0 AND next_attempt_time > ?", (now, now)
            ).rowcount

        return self._write(work)

    def defer(self, entry: OutboxEntry, delay_s: float) -> bool:
        """Not a failure (the document is busy, e.g. being re-indexed): look again later."""
        return self._update(entry, "next_attempt_time=?", (time.time() + delay_s,))

    def save_facts(self, entry: OutboxEntry, facts: str) -> bool:
        return self._update(entry, "facts=?", (facts,))

    def replace_operation(self, entry: OutboxEntry, operation: Operation) -> bool:
        """Turns the entry into another intent (a delete whose document survived a crash
        becomes an upsert), due now, with a new sequence."""
        def work(db: sqlite3.Connection) -> bool:
            if not _remove_if_current(db, entry):
                return False
            _put(db, entry.tenant, entry.document_id, operation, time.time(), entry.trace_context)
            return True

        return self._write(work)

    def _update(self, entry: OutboxEntry, assignments: str, values: tuple) -> bool:
        def work(db: sqlite3.Connection) -> bool:
            cursor = db.execute(
                f"UPDATE graph_outbox SET {assignments} WHERE tenant=? AND document_id=? AND sequence=?",
                (*values, entry.tenant, entry.document_id, entry.sequence),
            )
            return cursor.rowcount == 1

        return self._write(work)

    # -- inspection ------------------------------------------------------------------
    def entries(self, tenant: str | None = None) -> list[OutboxEntry]:
        sql, args = f"SELECT {COLUMNS} FROM graph_outbox", tuple[str, ...]()
        if tenant is not None:
            sql, args = sql + " WHERE tenant=?", (tenant,)
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY next_attempt_time, sequence", args).fetchall()
        return [entry_from_row(r) for r in rows]

    def get(self, tenant: str, document_id: str) -> OutboxEntry | None:
        with self._lock:
            row = self._conn.execute(
                f"SELECT {COLUMNS} FROM graph_outbox WHERE tenant=? AND document_id=?", (tenant, document_id)
            ).fetchone()
        return entry_from_row(row) if row else None


def _put(db: sqlite3.Connection, tenant: str, document_id: str, operation: Operation, now: float,
         trace_context: str | None = None) -> int:
    # A new sequence each time, above every live one, so a replaced intent never matches a reader's copy.
    sequence = db.execute("SELECT COALESCE(MAX(sequence), 0) + 1 FROM graph_outbox").fetchone()[0]
    db.execute(
        f"INSERT INTO graph_outbox ({COLUMNS}) VALUES (?, ?, ?, ?, 0, '', NULL, ?, ?, ?) "
        "ON CONFLICT(tenant, document_id) DO UPDATE SET operation=excluded.operation, sequence=excluded.sequence, "
        "attempts=0, last_error='', facts=NULL, enqueue_time=excluded.enqueue_time, "
        "next_attempt_time=excluded.next_attempt_time, trace_context=excluded.trace_context",
        (tenant, document_id, operation.value, sequence, now, now, trace_context),
    )
    return sequence


def _remove_if_current(db: sqlite3.Connection, entry: OutboxEntry) -> bool:
    cursor = db.execute(
        "DELETE FROM graph_outbox WHERE tenant=? AND document_id=? AND sequence=?",
        (entry.tenant, entry.document_id, entry.sequence),
    )
    return cursor.rowcount == 1
