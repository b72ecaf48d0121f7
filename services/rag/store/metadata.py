"""SQLite (WAL) metadata: documents, their extracted sections, and chunk rows.

This store is the commit point of ingestion: a document's chunk rows and its READY status
are written in one transaction, and every chunk read joins the documents table on READY.
Vectors written to the vector log/FAISS before that commit are therefore invisible until it lands,
and a crash before it leaves nothing visible. Each tenant also has a ``generation`` counter,
bumped with every change to its ready chunks, which derived indexes (BM25) compare against.

A unary ``+`` on ``tenant`` or ``status`` in a WHERE clause keeps SQLite's planner off the
(tenant, vector_key) and status indexes when a narrower key (chunk_id, document_id) is at hand:
without it, fetching the 24 chunks of one search scanned every chunk of the tenant or of every
ready document (50 to 170 ms per query at 100k chunks, against under 1 ms).

Ingestion leases (``store.leases``) work here exactly as on PostgreSQL, so one congruence suite covers
both; one process owns this file, so ``release_all_leases`` at open voids the leases of a process that
died, and its unfinished documents resume at once rather than when their leases run out.
"""

from __future__ import annotations

import json
import pathlib
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence

from services.rag.documents import Chunk, DocumentRecord, DocumentStatus, GraphSyncState, Section
from services.rag.store import timecodes
from services.rag.store.leases import LeaseLost
from services.rag.store.rows import (
    CHUNK_COLUMNS,
    CHUNK_INSERT_COLUMNS,
    DOC_COLUMNS,
    DOC_VALUES,
    KEYWORD_COLUMNS,
    READY,
    RECOUNT_TENANT_CHUNKS,
    SCHEMA,
    chunk_from_row,
    chunk_values,
    column_updates,
    document_values,
    keyword_text,
    placeholders,
    record_from_row,
)
from services.rag.store.sqlite_leases import CLAIMABLE, SqliteLeases
from services.rag.store.sqlite_versions import SqliteVersions, add_columns
from services.storage.replica import replica_id


class MetadataStore(SqliteLeases, SqliteVersions):
    """Thread-safe: one connection, one lock; callers on the event loop use ``asyncio.to_thread``."""

    def __init__(self, path: pathlib.Path, *, owner: str | None = None, lease_s: float = 30.0) -> None:
        self.owner = owner or replica_id()
        """Who this store's leases are held by (one per process)."""
        self.lease_s = lease_s
        """How long a claim or a renewal holds a document's lease."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA busy_timeout=5000")
            self._conn.executescript(SCHEMA)
            self._conn.executescript(timecodes.SCHEMA)
            columns = {row[1] for row in self._conn.execute("PRAGMA table_info(documents)")}
            if "claimed_by" not in columns:  # a database from before ingestion leases
                self._conn.execute("ALTER TABLE documents ADD COLUMN claimed_by TEXT")
                self._conn.execute("ALTER TABLE documents ADD COLUMN lease_until REAL")
            if "parse_attempts" not in columns:  # a database from before parse attempts were counted
                self._conn.execute("ALTER TABLE documents ADD COLUMN parse_attempts INTEGER NOT NULL DEFAULT 0")
            add_columns(self._conn)  # and from before versions
        with self._tx() as db:
            for statement in RECOUNT_TENANT_CHUNKS:
                db.execute(statement)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _tx(self):
        return _Transaction(self._conn, self._lock)

    # -- documents -------------------------------------------------------------------
    def upsert_document(self, record: DocumentRecord) -> bool:
        """Inserts a new document, or resets a failed or unfinished one being uploaded again, and claims its
        lease; False (nothing changed) when it is READY or another replica holds a live lease on it."""
        now = time.time()
        with self._tx() as db:
            return db.execute(
                f"INSERT INTO documents ({DOC_COLUMNS}, claimed_by, lease_until) "
                f"VALUES ({placeholders(DOC_VALUES + 2)}) "
                "ON CONFLICT(document_id) DO UPDATE SET filename=excluded.filename, file_type=excluded.file_type, "
                "content_type=excluded.content_type, status=excluded.status, error_message='', "
                "content_sha256=excluded.content_sha256, size_bytes=excluded.size_bytes, version=excluded.version, "
                "doc_key=excluded.doc_key, "
                "update_time=excluded.update_time, claimed_by=excluded.claimed_by, lease_until=excluded.lease_until, "
                "parse_attempts=0 "
                f"WHERE documents.status <> ? AND {CLAIMABLE}",
                (*document_values(record), self.owner, now + self.lease_s, READY, self.owner, now),
            ).rowcount == 1

    def update_document(self, document_id: str, **fields) -> None:
        """Unconditional (lease or not): for what is not the ingestion's, e.g. the graph-sync state."""
        values = column_updates(fields)
        assignments = ", ".join(f"{k}=?" for k in values)
        with self._tx() as db:
            row = db.execute("SELECT tenant, status FROM documents WHERE document_id=?", (document_id,)).fetchone()
            db.execute(f"UPDATE documents SET {assignments} WHERE document_id=?", (*values.values(), document_id))
            # A READY document leaving READY (re-index) hides its chunks: derived indexes must notice.
            if row and row["status"] == READY and values.get("status", READY) != READY:
                _bump(db, row["tenant"])

    def get_document(self, tenant: str, document_id: str) -> DocumentRecord | None:
        with self._lock:
            row = self._conn.execute(
                f"SELECT {DOC_COLUMNS} FROM documents WHERE tenant=? AND document_id=?", (tenant, document_id)
            ).fetchone()
        return record_from_row(row) if row else None

    def list_documents(
        self, tenant: str, limit: int, after: tuple[float, str] | None = None
    ) -> list[DocumentRecord]:
        """Newest first; ``after`` is the (create_time, document_id) of the last row already seen. Staging rows
        (versions being ingested) are not documents of their own: left out."""
        sql = f"SELECT {DOC_COLUMNS} FROM documents WHERE tenant=? AND version_of=''"
        args: list = [tenant]
        if after is not None:
            sql += " AND (create_time < ? OR (create_time = ? AND document_id < ?))"
            args += [after[0], after[0], after[1]]
        sql += " ORDER BY create_time DESC, document_id DESC LIMIT ?"
        args.append(limit)
        with self._lock:
            return [record_from_row(r) for r in self._conn.execute(sql, args).fetchall()]

    def count_documents(self, tenant: str) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM documents WHERE tenant=? AND version_of=''",
                                      (tenant,)).fetchone()[0]

    def count_chunks(self, tenant: str) -> int:
        """Chunks of the tenant's indexed documents (the per-tenant chunk quota counts these)."""
        with self._lock:
            row = self._conn.execute("SELECT chunks FROM tenant_chunks WHERE tenant=?", (tenant,)).fetchone()
        return row[0] if row is not None else 0

    def unfinished_documents(self) -> list[DocumentRecord]:
        """Documents in a non-terminal status (left behind by a crash), oldest first."""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {DOC_COLUMNS} FROM documents WHERE status NOT IN (?, ?) ORDER BY create_time",
                (READY, int(DocumentStatus.FAILED)),
            ).fetchall()
        return [record_from_row(r) for r in rows]

    # -- ingestion leases: the claims are ``SqliteLeases``'; the conditional write is here --------
    def update_claimed(self, tenant: str, document_id: str, **fields) -> bool:
        """``update_document`` while this replica holds the lease (False: it does not, nothing changed); a
        terminal status ends the lease."""
        values = column_updates(fields, ends_lease=True)
        assignments = ", ".join(f"{k}=?" for k in values)
        with self._tx() as db:
            row = db.execute("SELECT status FROM documents WHERE tenant=? AND document_id=? AND claimed_by=?",
                             (tenant, document_id, self.owner)).fetchone()
            if row is None:
                return False
            db.execute(f"UPDATE documents SET {assignments} WHERE document_id=?", (*values.values(), document_id))
            if row["status"] == READY and values.get("status", READY) != READY:
                _bump(db, tenant)
        return True

    def delete_document(self, tenant: str, document_id: str) -> list[str]:
        """Removes the document, its sections and chunk rows, and every earlier version (their chunks, vectors
        and sections) and staged one, in one transaction; returns the live chunk ids."""
        with self._tx() as db:
            self.delete_versions(db, tenant, document_id)
            ids = [r[0] for r in db.execute(
                "SELECT chunk_id FROM chunks WHERE +tenant=? AND document_id=?", (tenant, document_id))]
            db.execute("DELETE FROM chunks WHERE +tenant=? AND document_id=?", (tenant, document_id))
            db.execute("DELETE FROM sections WHERE document_id=?", (document_id,))
            timecodes.delete(db, document_id)
            gone = db.execute("DELETE FROM documents WHERE tenant=? AND document_id=?", (tenant, document_id))
            if ids or gone.rowcount:
                _bump(db, tenant)
        return ids

    # -- publication: the commit point of an ingest ----------------------------------
    def publish(
        self,
        record: DocumentRecord,
        sections: Sequence[Section],
        chunks: Sequence[Chunk],
        graph_sync: GraphSyncState,
    ) -> list[str]:
        """Replaces the document's sections and chunks and marks it READY, atomically.

        Returns the ids of chunk rows that existed before and are gone now (a re-index that
        produced fewer chunks), so the caller can drop their vectors. Raises ``LeaseLost`` (nothing
        written) unless this replica holds the document's lease; the lease ends with it.
        """
        with self._tx() as db:
            if db.execute("SELECT 1 FROM documents WHERE tenant=? AND document_id=? AND claimed_by=?",
                          (record.tenant, record.document_id, self.owner)).fetchone() is None:
                raise LeaseLost(record.document_id)
            old = {r[0] for r in db.execute("SELECT chunk_id FROM chunks WHERE document_id=?", (record.document_id,))}
            db.execute("DELETE FROM chunks WHERE document_id=?", (record.document_id,))
            db.execute("DELETE FROM sections WHERE document_id=?", (record.document_id,))
            db.executemany(
                "INSERT INTO sections VALUES (?,?,?,?,?,?,?)",
                [
                    (record.document_id, i, s.page, s.sheet_name, json.dumps(list(s.heading_path)),
                     json.dumps([list(r) for r in s.row_starts]), s.text)
                    for i, s in enumerate(sections)
                ],
            )
            db.executemany(f"INSERT INTO chunks ({CHUNK_INSERT_COLUMNS}) VALUES ({placeholders(16)})",
                           [chunk_values(c) for c in chunks])
            timecodes.write(db, record.document_id, chunks)
            self.write_version_row(db, record, len(chunks))
            db.execute(
                "UPDATE documents SET status=?, error_message='', chunk_count=?, page_count=?, sheet_names=?, "
                "title=?, graph_sync=?, update_time=?, claimed_by=NULL, lease_until=NULL WHERE document_id=?",
                (READY, len(chunks), record.page_count, json.dumps(list(record.sheet_names)), record.title,
                 int(graph_sync), time.time(), record.document_id),
            )
            _bump(db, record.tenant)
        return sorted(old - {c.chunk_id for c in chunks})

    def clear_chunks(self, tenant: str, document_id: str) -> list[str]:
        """Drops a document's chunk rows and sections (a failed ingest); returns the chunk ids."""
        with self._tx() as db:
            ids = [r[0] for r in db.execute(
                "SELECT chunk_id FROM chunks WHERE +tenant=? AND document_id=?", (tenant, document_id))]
            db.execute("DELETE FROM chunks WHERE +tenant=? AND document_id=?", (tenant, document_id))
            db.execute("DELETE FROM sections WHERE document_id=?", (document_id,))
            timecodes.delete(db, document_id)
            if ids:
                _bump(db, tenant)
        return ids

    def sections(self, document_id: str) -> list[Section]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT page, sheet_name, heading_path, row_starts, text FROM sections WHERE document_id=? "
                "ORDER BY position",
                (document_id,),
            ).fetchall()
        return [
            Section(text=r["text"], page=r["page"], sheet_name=r["sheet_name"],
                    heading_path=tuple(json.loads(r["heading_path"])),
                    row_starts=tuple(tuple(x) for x in json.loads(r["row_starts"])))
            for r in rows
        ]

    # -- chunk reads (ready documents only) --------------------------------------------
    def get_chunks(self, tenant: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Chunks of READY documents of this tenant, in the order asked; unknown ids are skipped."""
        found: dict[str, Chunk] = {}
        for batch in _batches(list(dict.fromkeys(chunk_ids))):
            with self._lock:
                rows = self._conn.execute(
                    f"SELECT {CHUNK_COLUMNS}, {timecodes.COLUMNS} FROM chunks c {timecodes.JOIN} "
                    "JOIN documents d ON d.document_id = c.document_id "
                    f"WHERE +c.tenant=? AND +d.status=? AND c.chunk_id IN ({placeholders(len(batch))})",
                    (tenant, READY, *batch),
                ).fetchall()
            found.update((r["chunk_id"], timecodes.timed(chunk_from_row(r), r)) for r in rows)
        return [found[i] for i in chunk_ids if i in found]

    def document_chunks(self, tenant: str, document_id: str) -> list[Chunk]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {CHUNK_COLUMNS}, {timecodes.COLUMNS} FROM chunks c {timecodes.JOIN} "
                "JOIN documents d ON d.document_id = c.document_id "
                "WHERE c.tenant=? AND c.document_id=? AND d.status=? ORDER BY c.ordinal",
                (tenant, document_id, READY),
            ).fetchall()
        return [timecodes.timed(chunk_from_row(r), r) for r in rows]

    def visible_ids_for_keys(self, tenant: str, keys: Sequence[int]) -> dict[int, str]:
        """FAISS keys -> chunk ids, keeping only chunks of this tenant's READY documents."""
        result: dict[int, str] = {}
        for batch in _batches(list(keys)):
            with self._lock:
                rows = self._conn.execute(
                    "SELECT c.vector_key, c.chunk_id FROM chunks c JOIN documents d ON d.document_id = c.document_id "
                    f"WHERE c.tenant=? AND +d.status=? AND c.vector_key IN ({placeholders(len(batch))})",
                    (tenant, READY, *batch),
                ).fetchall()
            result.update((r[0], r[1]) for r in rows)
        return result

    def visible_chunk_ids(self, tenant: str, document_ids: Iterable[str] | None = None) -> list[str]:
        sql = "SELECT c.chunk_id FROM chunks c JOIN documents d ON d.document_id = c.document_id WHERE "
        args: list = [tenant, READY]
        if document_ids is None:
            sql += "c.tenant=? AND d.status=?"
        else:
            ids = list(document_ids)
            sql += f"+c.tenant=? AND d.status=? AND c.document_id IN ({placeholders(len(ids))})"
            args += ids
        with self._lock:
            return [r[0] for r in self._conn.execute(sql, args)]

    def visible_texts(self, tenant: str) -> tuple[int, list[tuple[str, str]]]:
        """(generation, [(chunk id, text)]) of every visible chunk, read in one snapshot."""
        with self._tx() as db:
            generation = _generation(db, tenant)
            rows = db.execute(
                f"SELECT {KEYWORD_COLUMNS} FROM chunks c JOIN documents d ON d.document_id = c.document_id "
                "WHERE c.tenant=? AND d.status=? ORDER BY c.rowid",
                (tenant, READY),
            ).fetchall()
        return generation, [(r["chunk_id"], keyword_text(r)) for r in rows]

    def generation(self, tenant: str) -> int:
        with self._lock:
            return _generation(self._conn, tenant)

    def tenants(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT DISTINCT tenant FROM chunks")]

    def known_chunk_ids(self) -> set[str]:
        """Every chunk row, visible or not (for reconciling the vector store at startup)."""
        with self._lock:
            return {r[0] for r in self._conn.execute("SELECT chunk_id FROM chunks")}


class _Transaction:
    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock

    def __enter__(self) -> sqlite3.Connection:
        self._lock.acquire()
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._lock.release()
            raise
        return self._conn

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self._conn.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self._lock.release()


def _bump(db: sqlite3.Connection, tenant: str) -> None:
    db.execute(
        "INSERT INTO generations (tenant, generation) VALUES (?, 1) "
        "ON CONFLICT(tenant) DO UPDATE SET generation = generation + 1",
        (tenant,),
    )


def _generation(db: sqlite3.Connection, tenant: str) -> int:
    row = db.execute("SELECT generation FROM generations WHERE tenant=?", (tenant,)).fetchone()
    return row[0] if row else 0



def _batches(items: list, size: int = 500):
    for i in range(0, len(items), size):
        yield items[i : i + size]
