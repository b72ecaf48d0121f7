"""The graph outbox on PostgreSQL, shared by the graph-sync workers of every rag replica.

Same intents and sequence guard as ``GraphOutbox`` (see there), plus claims: ``next_due`` claims
the earliest due entry nobody holds (``FOR UPDATE SKIP LOCKED``, so two workers never pick the
same row or wait on each other) and stamps it with this worker's id and a lease. Every write a
worker makes is guarded by the sequence it read and by its own claim, and ends the claim (a
retry, a deferral) or removes the entry; saving facts extends the lease. A worker that dies
leaves its entry to another one once the lease has passed; if the first one was only slow, its
late writes match no row and change nothing. The graph writes themselves are idempotent
upserts and deletes, so an entry taken over after its work reached the graph is safe to redo:
each intent takes effect exactly once in the graph and is completed once.
"""

from __future__ import annotations

import time

from services.rag.documents import DocumentStatus, GraphSyncState
from services.rag.graph_sync.outbox import COLUMNS, MAX_ERROR_CHARS, Operation, OutboxEntry, entry_from_row
from services.runtime import tracing
from services.storage.postgres import Postgres
from services.storage.replica import replica_id

_MINE = "tenant=%s AND document_id=%s AND sequence=%s AND claimed_by=%s"


class PostgresGraphOutbox:
    """Thread-safe (a connection pool); blocking calls: the event loop uses ``asyncio.to_thread``."""

    def __init__(self, db: Postgres, lease_s: float = 300.0, owner: str | None = None) -> None:
        self._db = db
        self.lease_s = lease_s
        self.owner = owner or replica_id()

    def close(self) -> None:
        """The pool is the process's, shared with the other stores: left open."""

    # -- intents ---------------------------------------------------------------------
    def enqueue_upsert(self, tenant: str, document_id: str) -> int:
        with self._db.connection() as conn:
            return _put(conn, tenant, document_id, Operation.UPSERT, time.time(), tracing.current_traceparent())

    def enqueue_delete(self, tenant: str, document_id: str) -> int:
        """Replaces any pending upsert of the document: its facts must leave the graph, not arrive."""
        with self._db.connection() as conn:
            return _put(conn, tenant, document_id, Operation.DELETE, time.time(), tracing.current_traceparent())

    def depth(self) -> tuple[int, float | None]:
        with self._db.connection() as conn:
            row = conn.execute("SELECT COUNT(*) AS n, MIN(enqueue_time) AS oldest FROM rag_graph_outbox").fetchone()
        return int(row["n"]), row["oldest"]

    def reconcile(self) -> int:
        """Queues READY documents that say PENDING but have no entry; returns how many."""
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT d.tenant, d.document_id FROM rag_documents d WHERE d.status=%s AND d.graph_sync=%s "
                "AND NOT EXISTS (SELECT 1 FROM rag_graph_outbox o WHERE o.tenant=d.tenant "
                "AND o.document_id=d.document_id) ORDER BY d.update_time",
                (int(DocumentStatus.READY), int(GraphSyncState.PENDING)),
            ).fetchall()
            now = time.time()
            for row in rows:
                _put(conn, row["tenant"], row["document_id"], Operation.UPSERT, now, None, replace=False)
        return len(rows)

    # -- the worker's side -----------------------------------------------------------
    def next_due(self, now: float | None = None) -> OutboxEntry | None:
        """Claims the earliest due entry no other live worker holds (None: nothing due). This worker's
        own claims are offered again: it works one entry at a time, so one it asks for again was dropped."""
        now = time.time() if now is None else now
        with self._db.connection() as conn:
            row = conn.execute(
                f"UPDATE rag_graph_outbox SET claimed_by=%s, lease_until=%s WHERE (tenant, document_id) = ("
                "SELECT tenant, document_id FROM rag_graph_outbox WHERE next_attempt_time <= %s "
                "AND (claimed_by IS NULL OR claimed_by = %s OR lease_until < %s) ORDER BY next_attempt_time, sequence "
                f"LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING {COLUMNS}",
                (self.owner, now + self.lease_s, now, self.owner, now),
            ).fetchone()
        return entry_from_row(row) if row else None

    def next_attempt_time(self) -> float | None:
        """When the earliest entry falls due (a claimed one: when its lease ends); None: empty."""
        with self._db.connection() as conn:
            return conn.execute(
                "SELECT MIN(CASE WHEN claimed_by IS NULL THEN next_attempt_time "
                "ELSE GREATEST(next_attempt_time, lease_until) END) AS due FROM rag_graph_outbox"
            ).fetchone()["due"]

    def complete(self, entry: OutboxEntry, mark_synced: bool) -> bool:
        with self._db.connection() as conn:
            gone = conn.execute(f"DELETE FROM rag_graph_outbox WHERE {_MINE}", self._mine(entry)).rowcount == 1
            if gone and mark_synced:
                conn.execute(
                    "UPDATE rag_documents SET graph_sync=%s, update_time=%s "
                    "WHERE tenant=%s AND document_id=%s AND status=%s AND graph_sync=%s",
                    (int(GraphSyncState.SYNCED), time.time(), entry.tenant, entry.document_id,
                     int(DocumentStatus.READY), int(GraphSyncState.PENDING)),
                )
        return gone

    def retry_later(self, entry: OutboxEntry, error: str, delay_s: float) -> bool:
        return self._update(entry, "attempts=attempts+1, last_error=%s, next_attempt_time=%s, "
                                   "claimed_by=NULL, lease_until=NULL",
                            (error[:MAX_ERROR_CHARS], time.time() + delay_s))

    def retry_now(self) -> int:
        now = time.time()
        with self._db.connection() as conn:
            return conn.execute(
                "UPDATE rag_graph_outbox SET next_attempt_time=%s WHERE attempts > 0 AND next_attempt_time > %s",
                (now, now),
            ).rowcount

    def defer(self, entry: OutboxEntry, delay_s: float) -> bool:
        return self._update(entry, "next_attempt_time=%s, claimed_by=NULL, lease_until=NULL",
                            (time.time() + delay_s,))

    def save_facts(self, entry: OutboxEntry, facts: str) -> bool:
        return self._update(entry, "facts=%s, lease_until=%s", (facts, time.time() + self.lease_s))

    def replace_operation(self, entry: OutboxEntry, operation: Operation) -> bool:
        with self._db.connection() as conn:
            if conn.execute(f"DELETE FROM rag_graph_outbox WHERE {_MINE}", self._mine(entry)).rowcount != 1:
                return False
            _put(conn, entry.tenant, entry.document_id, operation, time.time(), entry.trace_context)
        return True

    def _mine(self, entry: OutboxEntry) -> tuple:
        return entry.tenant, entry.document_id, entry.sequence, self.owner

    def _update(self, entry: OutboxEntry, assignments: str, values: tuple) -> bool:
        with self._db.connection() as conn:
            return conn.execute(f"UPDATE rag_graph_outbox SET {assignments} WHERE {_MINE}",
                                (*values, *self._mine(entry))).rowcount == 1

    # -- inspection ------------------------------------------------------------------
    def entries(self, tenant: str | None = None) -> list[OutboxEntry]:
        sql, args = f"SELECT {COLUMNS} FROM rag_graph_outbox", []
        if tenant is not None:
            sql, args = sql + " WHERE tenant=%s", [tenant]
        with self._db.connection() as conn:
            rows = conn.execute(sql + " ORDER BY next_attempt_time, sequence", args).fetchall()
        return [entry_from_row(r) for r in rows]

    def get(self, tenant: str, document_id: str) -> OutboxEntry | None:
        with self._db.connection() as conn:
            row = conn.execute(f"SELECT {COLUMNS} FROM rag_graph_outbox WHERE tenant=%s AND document_id=%s",
                               (tenant, document_id)).fetchone()
        return entry_from_row(row) if row else None


def _put(conn, tenant: str, document_id: str, operation: Operation, now: float, trace_context: str | None,
         replace: bool = True) -> int:
    """Writes the intent with a new sequence (a replaced intent never matches a reader's copy);
    a replacement also ends any claim on the old one."""
    conflict = ("DO UPDATE SET operation=excluded.operation, sequence=excluded.sequence, attempts=0, last_error='', "
                "facts=NULL, enqueue_time=excluded.enqueue_time, next_attempt_time=excluded.next_attempt_time, "
                "trace_context=excluded.trace_context, claimed_by=NULL, lease_until=NULL") if replace else "DO NOTHING"
    row = conn.execute(
        f"INSERT INTO rag_graph_outbox ({COLUMNS}) VALUES (%s, %s, %s, nextval('rag_graph_outbox_sequence'), 0, '', "
        f"NULL, %s, %s, %s) ON CONFLICT (tenant, document_id) {conflict} RETURNING sequence",
        (tenant, document_id, operation.value, now, now, trace_context),
    ).fetchone()
    return int(row["sequence"]) if row else 0
