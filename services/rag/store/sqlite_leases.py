"""The ingestion-lease claims of the SQLite ``MetadataStore`` (the rules: ``store.leases``).

Same statements and outcomes as ``PostgresMetadataStore``'s, timed by this machine's clock. SQLite
runs one write transaction at a time (``BEGIN IMMEDIATE``), which makes each claim's read-then-write
atomic, as ``FOR UPDATE SKIP LOCKED`` does on PostgreSQL.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Any

from services.rag.documents import DocumentRecord, DocumentStatus
from services.rag.store.rows import DOC_COLUMNS, TERMINAL, record_from_row

CLAIMABLE = "(claimed_by IS NULL OR claimed_by = ? OR lease_until < ?)"
"""Nobody else holds a live lease (parameters: this store's owner, now)."""


class SqliteLeases:
    """Mixed into ``MetadataStore``, whose connection, lock and transactions these use."""

    owner: str
    lease_s: float
    _conn: sqlite3.Connection
    _lock: threading.RLock

    def _tx(self) -> Any: ...

    def claim_document(self, tenant: str, document_id: str) -> bool:
        """Takes the document's lease (a re-index); False while another replica holds a live one."""
        now = time.time()
        with self._tx() as db:
            return db.execute(
                f"UPDATE documents SET claimed_by=?, lease_until=? WHERE tenant=? AND document_id=? AND {CLAIMABLE}",
                (self.owner, now + self.lease_s, tenant, document_id, self.owner, now),
            ).rowcount == 1

    def claim_unfinished(self) -> DocumentRecord | None:
        """Claims the oldest unfinished document nobody holds a live lease on (the takeover sweep)."""
        now = time.time()
        with self._tx() as db:
            row = db.execute(
                f"SELECT {DOC_COLUMNS} FROM documents WHERE status NOT IN (?, ?) "
                "AND (claimed_by IS NULL OR lease_until < ?) ORDER BY create_time LIMIT 1",
                (*TERMINAL, now),
            ).fetchone()
            if row is None:
                return None
            db.execute("UPDATE documents SET claimed_by=?, lease_until=? WHERE document_id=?",
                       (self.owner, now + self.lease_s, row["document_id"]))
        return record_from_row(row)

    def begin_parse(self, tenant: str, document_id: str) -> int | None:
        """PARSING, one more parse attempt counted (while this replica holds the lease): the attempts so far,
        or None when it does not hold it."""
        with self._tx() as db:
            row = db.execute(
                "UPDATE documents SET status=?, parse_attempts=parse_attempts+1, update_time=? "
                "WHERE tenant=? AND document_id=? AND claimed_by=? RETURNING parse_attempts",
                (int(DocumentStatus.PARSING), time.time(), tenant, document_id, self.owner),
            ).fetchone()
        return None if row is None else int(row[0])

    def parse_attempts(self, tenant: str, document_id: str) -> int:
        """Parses of the document begun and not finished (a parser or a service died while reading it)."""
        with self._lock:
            row = self._conn.execute("SELECT parse_attempts FROM documents WHERE tenant=? AND document_id=?",
                                     (tenant, document_id)).fetchone()
        return int(row[0]) if row else 0

    def renew_lease(self, tenant: str, document_id: str) -> bool:
        """Extends this replica's lease; False: it no longer holds it (taken over, or the document is done)."""
        with self._tx() as db:
            return db.execute(
                "UPDATE documents SET lease_until=? WHERE tenant=? AND document_id=? AND claimed_by=?",
                (time.time() + self.lease_s, tenant, document_id, self.owner),
            ).rowcount == 1

    def release_lease(self, tenant: str, document_id: str) -> None:
        """Lets go of the lease (a shutdown mid-ingestion): any replica's next sweep may take the document."""
        with self._tx() as db:
            db.execute("UPDATE documents SET claimed_by=NULL, lease_until=NULL "
                       "WHERE tenant=? AND document_id=? AND claimed_by=?", (tenant, document_id, self.owner))

    def release_all_leases(self) -> int:
        """Voids every lease (embedded only, at open: the process that held them is gone); returns how many."""
        with self._tx() as db:
            return db.execute("UPDATE documents SET claimed_by=NULL, lease_until=NULL "
                              "WHERE claimed_by IS NOT NULL").rowcount

    def lease_holder(self, tenant: str, document_id: str) -> str | None:
        """The replica holding a live lease on the document (None: nobody, or its lease ran out)."""
        with self._lock:
            row = self._conn.execute("SELECT claimed_by FROM documents WHERE tenant=? AND document_id=? "
                                     "AND lease_until >= ?", (tenant, document_id, time.time())).fetchone()
        return row[0] if row else None
