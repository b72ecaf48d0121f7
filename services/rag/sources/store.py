"""Sources and their items in SQLite (``rag/sources.sqlite3``), with the lease rules of ingestion.

A replica syncing a source holds its lease (``claimed_by`` = this store's owner, ``lease_until``) from the claim
until the sync ends, renewing it by heartbeat; only the holder records the run's progress and end. One process
owns this file, so leases found at open are a dead process's and are voided. ``pg_store`` is the same on
PostgreSQL, where every replica claims from one table.
"""

from __future__ import annotations

import json
import pathlib
import sqlite3
import threading
import time
from typing import Any

from services.rag.sources.model import SourceItem, SourceKind, SourceRecord, SourceState
from services.rag.sources.rows import (
    FINISHED,
    ITEM_COLUMNS,
    ITEM_VALUES,
    SOURCE_COLUMNS,
    SOURCE_VALUES,
    UPDATABLE,
    column_value,
    item_from_row,
    item_values,
    source_from_row,
    source_values,
)
from services.storage.replica import replica_id

SCHEMA = """
CREATE TABLE IF NOT EXISTS sources (
    source_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    config TEXT NOT NULL,
    secret TEXT NOT NULL,
    interval_s INTEGER NOT NULL,
    paused INTEGER NOT NULL,
    create_time REAL NOT NULL,
    update_time REAL NOT NULL,
    next_run REAL NOT NULL,
    requested INTEGER NOT NULL,
    state INTEGER NOT NULL,
    last_run_start REAL,
    last_run_end REAL,
    last_success REAL,
    counts TEXT NOT NULL,
    error_reason TEXT NOT NULL,
    error_message TEXT NOT NULL,
    consecutive_failures INTEGER NOT NULL,
    cursor TEXT NOT NULL,
    claimed_by TEXT,
    lease_until REAL
);
CREATE INDEX IF NOT EXISTS sources_by_tenant ON sources (tenant, create_time, source_id);
CREATE INDEX IF NOT EXISTS sources_due ON sources (next_run);
CREATE TABLE IF NOT EXISTS source_items (
    source_id TEXT NOT NULL,
    item_key TEXT NOT NULL,
    tenant TEXT NOT NULL,
    token TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    document_ids TEXT NOT NULL,
    failed INTEGER NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt REAL,
    error_reason TEXT NOT NULL,
    error_message TEXT NOT NULL,
    update_time REAL NOT NULL,
    PRIMARY KEY (source_id, item_key)
) WITHOUT ROWID;
"""
DUE = "(requested = 1 OR (paused = 0 AND next_run <= ?)) AND (claimed_by IS NULL OR lease_until < ?)"


class SqliteSourceStore:
    """Thread-safe (one connection, one lock); blocking: the event loop calls it through ``asyncio.to_thread``."""

    def __init__(self, path: pathlib.Path, *, owner: str | None = None, lease_s: float = 60.0) -> None:
        self.owner = owner or replica_id()
        self.lease_s = lease_s
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA busy_timeout=5000")
            self._conn.executescript(SCHEMA)
            # This process owns the file: a lease in it is a dead process's (its sync resumes now).
            self._conn.execute("UPDATE sources SET claimed_by=NULL, lease_until=NULL, "
                               "state=CASE WHEN state=? THEN ? ELSE state END",
                               (int(SourceState.RUNNING), int(SourceState.FAILED)))

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _one(self, sql: str, args: tuple) -> sqlite3.Row | None:
        with self._lock:
            return self._conn.execute(sql, args).fetchone()

    def _run(self, sql: str, args: tuple) -> int:
        with self._lock:
            return self._conn.execute(sql, args).rowcount

    # -- sources ----------------------------------------------------------------------------
    def create(self, record: SourceRecord) -> None:
        self._run(f"INSERT INTO sources ({SOURCE_COLUMNS}) VALUES ({','.join('?' * SOURCE_VALUES)})",
                  source_values(record))

    def get(self, tenant: str, source_id: str) -> SourceRecord | None:
        row = self._one(f"SELECT {SOURCE_COLUMNS} FROM sources WHERE tenant=? AND source_id=?", (tenant, source_id))
        return source_from_row(row) if row else None

    def page(self, tenant: str, limit: int, offset: int = 0) -> list[SourceRecord]:
        with self._lock:
            rows = self._conn.execute(f"SELECT {SOURCE_COLUMNS} FROM sources WHERE tenant=? "
                                      "ORDER BY create_time, source_id LIMIT ? OFFSET ?",
                                      (tenant, limit, offset)).fetchall()
        return [source_from_row(r) for r in rows]

    def update(self, tenant: str, source_id: str, **fields: Any) -> bool:
        unknown = set(fields) - UPDATABLE
        if unknown:
            raise ValueError(f"not updatable: {sorted(unknown)}")
        assignments = ", ".join(f"{k}=?" for k in fields)
        return self._run(f"UPDATE sources SET {assignments} WHERE tenant=? AND source_id=?",
                         (*(column_value(k, v) for k, v in fields.items()), tenant, source_id)) == 1

    def delete(self, tenant: str, source_id: str) -> list[SourceItem] | None:
        """Removes the source and its items; returns the items (None: no such source)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                items = [item_from_row(r) for r in self._conn.execute(
                    f"SELECT {ITEM_COLUMNS} FROM source_items WHERE tenant=? AND source_id=?", (tenant, source_id))]
                gone = self._conn.execute("DELETE FROM sources WHERE tenant=? AND source_id=?",
                                          (tenant, source_id)).rowcount
                self._conn.execute("DELETE FROM source_items WHERE tenant=? AND source_id=?", (tenant, source_id))
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return items if gone else None

    def request_sync(self, tenant: str, source_id: str) -> bool:
        return self._run("UPDATE sources SET requested=1, next_run=MIN(next_run, ?) WHERE tenant=? AND source_id=?",
                         (time.time(), tenant, source_id)) == 1

    # -- the sync's lease -----------------------------------------------------------------------
    def claim_due(self) -> SourceRecord | None:
        """Claims the most overdue source nobody holds (asked for, or due and not paused): RUNNING from now."""
        now = time.time()
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                row = self._conn.execute(f"SELECT source_id FROM sources WHERE {DUE} ORDER BY requested DESC, "
                                         "next_run LIMIT 1", (now, now)).fetchone()
                if row is not None:
                    self._conn.execute("UPDATE sources SET claimed_by=?, lease_until=?, requested=0, state=?, "
                                       "last_run_start=? WHERE source_id=?",
                                       (self.owner, now + self.lease_s, int(SourceState.RUNNING), now,
                                        row["source_id"]))
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        if row is None:
            return None
        claimed = self._one(f"SELECT {SOURCE_COLUMNS} FROM sources WHERE source_id=?", (row["source_id"],))
        return source_from_row(claimed) if claimed else None

    def renew_lease(self, tenant: str, source_id: str) -> bool:
        return self._run("UPDATE sources SET lease_until=? WHERE tenant=? AND source_id=? AND claimed_by=?",
                         (time.time() + self.lease_s, tenant, source_id, self.owner)) == 1

    def release_lease(self, tenant: str, source_id: str) -> None:
        self._run("UPDATE sources SET claimed_by=NULL, lease_until=NULL WHERE tenant=? AND source_id=? "
                  "AND claimed_by=?", (tenant, source_id, self.owner))

    def lease_holder(self, tenant: str, source_id: str) -> str | None:
        row = self._one("SELECT claimed_by FROM sources WHERE tenant=? AND source_id=? AND lease_until >= ?",
                        (tenant, source_id, time.time()))
        return row["claimed_by"] if row else None

    def progress(self, tenant: str, source_id: str, counts: Any) -> bool:
        """The running sync's counts so far (only while this replica holds the source)."""
        return self._run("UPDATE sources SET counts=? WHERE tenant=? AND source_id=? AND claimed_by=?",
                         (column_value("counts", counts), tenant, source_id, self.owner)) == 1

    def finish(self, tenant: str, source_id: str, **fields: Any) -> bool:
        """Records the end of a sync and lets go of the source (only while this replica holds it)."""
        unknown = set(fields) - FINISHED
        if unknown:
            raise ValueError(f"not a sync's outcome: {sorted(unknown)}")
        assignments = "".join(f"{k}=?, " for k in fields)
        return self._run(f"UPDATE sources SET {assignments}claimed_by=NULL, lease_until=NULL "
                         "WHERE tenant=? AND source_id=? AND claimed_by=?",
                         (*(column_value(k, v) for k, v in fields.items()), tenant, source_id, self.owner)) == 1

    # -- items --------------------------------------------------------------------------------
    def items(self, tenant: str, source_id: str) -> dict[str, SourceItem]:
        with self._lock:
            rows = self._conn.execute(f"SELECT {ITEM_COLUMNS} FROM source_items WHERE tenant=? AND source_id=?",
                                      (tenant, source_id)).fetchall()
        return {r["item_key"]: item_from_row(r) for r in rows}

    def put_item(self, item: SourceItem) -> None:
        self._run(f"INSERT OR REPLACE INTO source_items ({ITEM_COLUMNS}) VALUES ({','.join('?' * ITEM_VALUES)})",
                  item_values(item))

    def delete_item(self, tenant: str, source_id: str, key: str) -> None:
        self._run("DELETE FROM source_items WHERE tenant=? AND source_id=? AND item_key=?", (tenant, source_id, key))

    def item_errors(self, tenant: str, source_id: str, limit: int = 50) -> tuple[list[SourceItem], int]:
        """The failing items (newest first, at most ``limit``) and how many fail."""
        with self._lock:
            rows = self._conn.execute(f"SELECT {ITEM_COLUMNS} FROM source_items WHERE tenant=? AND source_id=? "
                                      "AND failed=1 ORDER BY update_time DESC LIMIT ?",
                                      (tenant, source_id, limit)).fetchall()
            total = self._conn.execute("SELECT COUNT(*) FROM source_items WHERE tenant=? AND source_id=? "
                                       "AND failed=1", (tenant, source_id)).fetchone()[0]
        return [item_from_row(r) for r in rows], total

    def document_count(self, tenant: str, source_id: str) -> int:
        with self._lock:
            rows = self._conn.execute("SELECT document_ids FROM source_items WHERE tenant=? AND source_id=?",
                                      (tenant, source_id)).fetchall()
        return sum(len(json.loads(r[0])) for r in rows)

    # -- the scheduler's reads ---------------------------------------------------------------------
    def watched_folders(self) -> list[SourceRecord]:
        """Folder sources of every tenant that are not paused (each replica watches those it can see)."""
        with self._lock:
            rows = self._conn.execute(f"SELECT {SOURCE_COLUMNS} FROM sources WHERE kind=? AND paused=0",
                                      (SourceKind.FOLDER.value,)).fetchall()
        return [source_from_row(r) for r in rows]

    def state_counts(self) -> dict[SourceState, int]:
        with self._lock:
            rows = self._conn.execute("SELECT state, COUNT(*) FROM sources GROUP BY state").fetchall()
        return {SourceState(r[0]): r[1] for r in rows}
