"""Sources and their items on PostgreSQL, shared by every replica: ``SqliteSourceStore``'s statements, with
leases timed by the database's clock and claims that skip rows another replica is claiming
(``FOR UPDATE SKIP LOCKED``), so two replicas looking at once take different sources."""

from __future__ import annotations

import json
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
from services.storage.postgres import Postgres
from services.storage.replica import replica_id

NOW = "extract(epoch FROM clock_timestamp())::float8"


def _marks(n: int) -> str:
    return ", ".join(["%s"] * n)


class PostgresSourceStore:
    def __init__(self, db: Postgres, *, owner: str | None = None, lease_s: float = 60.0) -> None:
        self._db = db
        self.owner = owner or replica_id()
        self.lease_s = lease_s

    def close(self) -> None:
        """The pool is the process's: left open."""

    def create(self, record: SourceRecord) -> None:
        with self._db.connection() as conn:
            conn.execute(f"INSERT INTO rag_sources ({SOURCE_COLUMNS}) VALUES ({_marks(SOURCE_VALUES)})",
                         source_values(record))

    def get(self, tenant: str, source_id: str) -> SourceRecord | None:
        with self._db.connection() as conn:
            row = conn.execute(f"SELECT {SOURCE_COLUMNS} FROM rag_sources WHERE tenant=%s AND source_id=%s",
                               (tenant, source_id)).fetchone()
        return source_from_row(row) if row else None

    def page(self, tenant: str, limit: int, offset: int = 0) -> list[SourceRecord]:
        with self._db.connection() as conn:
            rows = conn.execute(f"SELECT {SOURCE_COLUMNS} FROM rag_sources WHERE tenant=%s "
                                "ORDER BY create_time, source_id LIMIT %s OFFSET %s", (tenant, limit, offset)).fetchall()
        return [source_from_row(r) for r in rows]

    def update(self, tenant: str, source_id: str, **fields: Any) -> bool:
        unknown = set(fields) - UPDATABLE
        if unknown:
            raise ValueError(f"not updatable: {sorted(unknown)}")
        assignments = ", ".join(f"{k}=%s" for k in fields)
        with self._db.connection() as conn:
            return conn.execute(f"UPDATE rag_sources SET {assignments} WHERE tenant=%s AND source_id=%s",
                                (*(column_value(k, v) for k, v in fields.items()), tenant, source_id)).rowcount == 1

    def delete(self, tenant: str, source_id: str) -> list[SourceItem] | None:
        with self._db.connection() as conn:
            items = [item_from_row(r) for r in conn.execute(
                f"DELETE FROM rag_source_items WHERE tenant=%s AND source_id=%s RETURNING {ITEM_COLUMNS}",
                (tenant, source_id))]
            gone = conn.execute("DELETE FROM rag_sources WHERE tenant=%s AND source_id=%s",
                                (tenant, source_id)).rowcount
        return items if gone else None

    def request_sync(self, tenant: str, source_id: str) -> bool:
        with self._db.connection() as conn:
            return conn.execute("UPDATE rag_sources SET requested=1, next_run=LEAST(next_run, %s) "
                                "WHERE tenant=%s AND source_id=%s", (time.time(), tenant, source_id)).rowcount == 1

    def claim_due(self) -> SourceRecord | None:
        now = time.time()
        with self._db.connection() as conn:
            row = conn.execute(
                f"UPDATE rag_sources SET claimed_by=%s, lease_until={NOW} + %s, requested=0, state=%s, "
                "last_run_start=%s WHERE (tenant, source_id) = (SELECT tenant, source_id FROM rag_sources "
                f"WHERE (requested = 1 OR (paused = 0 AND next_run <= %s)) AND (claimed_by IS NULL OR "
                f"lease_until < {NOW}) ORDER BY requested DESC, next_run LIMIT 1 FOR UPDATE SKIP LOCKED) "
                f"RETURNING {SOURCE_COLUMNS}",
                (self.owner, self.lease_s, int(SourceState.RUNNING), now, now)).fetchone()
        return source_from_row(row) if row else None

    def renew_lease(self, tenant: str, source_id: str) -> bool:
        with self._db.connection() as conn:
            return conn.execute(f"UPDATE rag_sources SET lease_until={NOW} + %s WHERE tenant=%s AND source_id=%s "
                                "AND claimed_by=%s", (self.lease_s, tenant, source_id, self.owner)).rowcount == 1

    def release_lease(self, tenant: str, source_id: str) -> None:
        with self._db.connection() as conn:
            conn.execute("UPDATE rag_sources SET claimed_by=NULL, lease_until=NULL WHERE tenant=%s "
                         "AND source_id=%s AND claimed_by=%s", (tenant, source_id, self.owner))

    def lease_holder(self, tenant: str, source_id: str) -> str | None:
        with self._db.connection() as conn:
            row = conn.execute(f"SELECT claimed_by FROM rag_sources WHERE tenant=%s AND source_id=%s "
                               f"AND lease_until >= {NOW}", (tenant, source_id)).fetchone()
        return row["claimed_by"] if row else None

    def progress(self, tenant: str, source_id: str, counts: Any) -> bool:
        with self._db.connection() as conn:
            return conn.execute("UPDATE rag_sources SET counts=%s WHERE tenant=%s AND source_id=%s AND claimed_by=%s",
                                (column_value("counts", counts), tenant, source_id, self.owner)).rowcount == 1

    def finish(self, tenant: str, source_id: str, **fields: Any) -> bool:
        unknown = set(fields) - FINISHED
        if unknown:
            raise ValueError(f"not a sync's outcome: {sorted(unknown)}")
        assignments = "".join(f"{k}=%s, " for k in fields)
        with self._db.connection() as conn:
            return conn.execute(f"UPDATE rag_sources SET {assignments}claimed_by=NULL, lease_until=NULL "
                                "WHERE tenant=%s AND source_id=%s AND claimed_by=%s",
                                (*(column_value(k, v) for k, v in fields.items()), tenant, source_id,
                                 self.owner)).rowcount == 1

    def items(self, tenant: str, source_id: str) -> dict[str, SourceItem]:
        with self._db.connection() as conn:
            rows = conn.execute(f"SELECT {ITEM_COLUMNS} FROM rag_source_items WHERE tenant=%s AND source_id=%s",
                                (tenant, source_id)).fetchall()
        return {r["item_key"]: item_from_row(r) for r in rows}

    def put_item(self, item: SourceItem) -> None:
        updates = ", ".join(f"{c.strip()}=excluded.{c.strip()}" for c in ITEM_COLUMNS.split(",")[3:])
        with self._db.connection() as conn:
            conn.execute(f"INSERT INTO rag_source_items ({ITEM_COLUMNS}) VALUES ({_marks(ITEM_VALUES)}) "
                         f"ON CONFLICT (tenant, source_id, item_key) DO UPDATE SET {updates}", item_values(item))

    def delete_item(self, tenant: str, source_id: str, key: str) -> None:
        with self._db.connection() as conn:
            conn.execute("DELETE FROM rag_source_items WHERE tenant=%s AND source_id=%s AND item_key=%s",
                         (tenant, source_id, key))

    def item_errors(self, tenant: str, source_id: str, limit: int = 50) -> tuple[list[SourceItem], int]:
        with self._db.connection() as conn:
            rows = conn.execute(f"SELECT {ITEM_COLUMNS} FROM rag_source_items WHERE tenant=%s AND source_id=%s "
                                "AND failed=1 ORDER BY update_time DESC LIMIT %s", (tenant, source_id, limit)).fetchall()
            total = conn.execute("SELECT COUNT(*) AS n FROM rag_source_items WHERE tenant=%s AND source_id=%s "
                                 "AND failed=1", (tenant, source_id)).fetchone()["n"]
        return [item_from_row(r) for r in rows], total

    def document_count(self, tenant: str, source_id: str) -> int:
        with self._db.connection() as conn:
            rows = conn.execute("SELECT document_ids FROM rag_source_items WHERE tenant=%s AND source_id=%s",
                                (tenant, source_id)).fetchall()
        return sum(len(json.loads(r["document_ids"])) for r in rows)

    def watched_folders(self) -> list[SourceRecord]:
        with self._db.connection() as conn:
            rows = conn.execute(f"SELECT {SOURCE_COLUMNS} FROM rag_sources WHERE kind=%s AND paused=0",
                                (SourceKind.FOLDER.value,)).fetchall()
        return [source_from_row(r) for r in rows]

    def state_counts(self) -> dict[SourceState, int]:
        with self._db.connection() as conn:
            rows = conn.execute("SELECT state, COUNT(*) AS n FROM rag_sources GROUP BY state").fetchall()
        return {SourceState(r["state"]): r["n"] for r in rows}
