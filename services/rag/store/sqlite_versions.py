"""Document versions in the SQLite ``MetadataStore``: staging rows, the promotion, the archive.

The live version of a document keeps the ``documents``/``sections``/``chunks`` rows every search
reads, so nothing on the search path changed. A new version is ingested on a staging row (``version_of``
names the document) under its own lease; ``promote`` then archives the live chunks (with their vectors)
and sections, writes the new ones under the document's id and marks the document READY at the new
version, in one transaction. ``store.pg_versions`` runs the same statements on PostgreSQL.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from services.rag.documents import Chunk, DocumentRecord, DocumentStatus, GraphSyncState, Section
from services.rag.store import timecodes
from services.rag.store.leases import LeaseLost
from services.rag.store.rows import (
    CHUNK_INSERT_COLUMNS,
    DOC_COLUMNS,
    DOC_VALUES,
    READY,
    VERSION_COLUMNS,
    chunk_from_row,
    chunk_values,
    document_values,
    placeholders,
    record_from_row,
)
from services.rag.store.version_rows import (
    ARCHIVE_COLUMNS,
    ARCHIVED_CHUNK,
    LIVE_CHUNK,
    REPUBLISHED,
    SECTION_COLUMNS,
    archive_rows,
    merge_versions,
    section_from_row,
    stored_vector,
    vector_blob,
    version_from_row,
    version_row,
)
from services.rag.versions.model import DocumentVersion, StoredVector, TargetBusy

SCHEMA = """
CREATE TABLE IF NOT EXISTS document_versions (
    document_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    tenant TEXT NOT NULL,
    filename TEXT NOT NULL,
    file_type TEXT NOT NULL,
    content_type TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    page_count INTEGER NOT NULL,
    sheet_names TEXT NOT NULL,
    title TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    chunks_embedded INTEGER NOT NULL,
    chunks_reused INTEGER NOT NULL,
    create_time REAL NOT NULL,
    superseded_time REAL,
    PRIMARY KEY (document_id, version)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS document_versions_by_sha ON document_versions (tenant, content_sha256);
CREATE TABLE IF NOT EXISTS version_sections (
    document_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    position INTEGER NOT NULL,
    page INTEGER NOT NULL,
    sheet_name TEXT NOT NULL,
    heading_path TEXT NOT NULL,
    row_starts TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (document_id, version, position)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS version_chunks (
    chunk_id TEXT PRIMARY KEY,
    vector_key INTEGER NOT NULL,
    tenant TEXT NOT NULL,
    document_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    section_index INTEGER NOT NULL,
    text TEXT NOT NULL,
    filename TEXT NOT NULL,
    page INTEGER NOT NULL,
    sheet_name TEXT NOT NULL,
    row_start INTEGER NOT NULL,
    row_end INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    char_start INTEGER NOT NULL,
    char_end INTEGER NOT NULL,
    version INTEGER NOT NULL,
    start_seconds REAL,
    end_seconds REAL,
    time_starts TEXT,
    vector BLOB
);
CREATE INDEX IF NOT EXISTS version_chunks_by_document ON version_chunks (document_id, version, ordinal);
CREATE INDEX IF NOT EXISTS documents_by_version_of ON documents (version_of) WHERE version_of <> '';
"""

NEW_DOCUMENT_COLUMNS = {
    "version": "INTEGER NOT NULL DEFAULT 1",
    "doc_key": "TEXT NOT NULL DEFAULT ''",
    "version_of": "TEXT NOT NULL DEFAULT ''",
}
"""Columns a database from before versions lacks (added at open)."""

def add_columns(conn: sqlite3.Connection) -> None:
    """Brings a database from before versions up to date (new columns, then the new tables)."""
    documents = {row[1] for row in conn.execute("PRAGMA table_info(documents)")}
    for name, kind in NEW_DOCUMENT_COLUMNS.items():
        if name not in documents:
            conn.execute(f"ALTER TABLE documents ADD COLUMN {name} {kind}")
    if "version" not in {row[1] for row in conn.execute("PRAGMA table_info(chunks)")}:
        conn.execute("ALTER TABLE chunks ADD COLUMN version INTEGER NOT NULL DEFAULT 1")
    conn.executescript(SCHEMA)


class SqliteVersions:
    """Mixed into ``MetadataStore``, whose connection, lock and transactions these use."""

    owner: str
    lease_s: float
    _conn: sqlite3.Connection
    _lock: threading.RLock

    def _tx(self) -> Any: ...

    # -- staging a new version ------------------------------------------------------------
    def claim_version(self, record: DocumentRecord) -> DocumentRecord | None:
        """Claims the staging row of ``record`` (new bytes for ``record.version_of``) and numbers the version:
        a failed or abandoned row of the same bytes is taken again with its number. None while another
        replica holds it (ingesting the same bytes); raises ``LookupError`` when the document is gone."""
        now = time.time()
        with self._tx() as db:
            target = db.execute("SELECT version FROM documents WHERE tenant=? AND document_id=? AND version_of=''",
                                (record.tenant, record.version_of)).fetchone()
            if target is None:
                raise LookupError(record.version_of)
            row = db.execute("SELECT version, claimed_by, lease_until FROM documents WHERE document_id=?",
                             (record.document_id,)).fetchone()
            if row is not None:
                if row["claimed_by"] not in (None, self.owner) and (row["lease_until"] or 0) >= now:
                    return None
                db.execute("UPDATE documents SET status=?, error_message='', filename=?, content_type=?, "
                           "update_time=?, claimed_by=?, lease_until=? WHERE document_id=?",
                           (int(DocumentStatus.PENDING), record.filename, record.content_type, now, self.owner,
                            now + self.lease_s, record.document_id))
                claimed = db.execute(f"SELECT {DOC_COLUMNS} FROM documents WHERE document_id=?",
                                     (record.document_id,)).fetchone()
                return record_from_row(claimed)
            number = 1 + max(
                target["version"],
                db.execute("SELECT COALESCE(MAX(version), 0) FROM document_versions WHERE document_id=?",
                           (record.version_of,)).fetchone()[0],
                db.execute("SELECT COALESCE(MAX(version), 0) FROM documents WHERE version_of=?",
                           (record.version_of,)).fetchone()[0],
            )
            staged = DocumentRecord(**{**record.__dict__, "version": number, "status": DocumentStatus.PENDING,
                                       "create_time": now, "update_time": now})
            db.execute(f"INSERT INTO documents ({DOC_COLUMNS}, claimed_by, lease_until) "
                       f"VALUES ({placeholders(DOC_VALUES + 2)})",
                       (*document_values(staged), self.owner, now + self.lease_s))
        return staged

    def promote(self, staging: DocumentRecord, sections: Sequence[Section], chunks: Sequence[Chunk],
                graph_sync: GraphSyncState, live_vectors: Mapping[str, np.ndarray | None],
                staged_vectors: Mapping[str, np.ndarray | None], embedded: int,
                reused: int) -> tuple[list[str], DocumentRecord]:
        """Makes a staged version the document's live one (or, when a newer version went live first, an
        archived one): archives the live chunks with ``live_vectors`` (their vectors, read by the caller) and
        sections, writes the new chunks and sections under the document's id, moves the document to the new
        version, READY, and drops the staging row, atomically. Returns the chunk ids whose vectors leave the
        search indexes (the old live ones, or the staged ones when archived directly) and the document.

        Raises ``LeaseLost`` unless this replica holds the staging row's lease, ``LookupError`` when the
        document is gone, ``TargetBusy`` while another replica holds the document's lease (a re-index) or the
        live chunks are not those whose vectors were read."""
        tenant, target = staging.tenant, staging.version_of
        now = time.time()
        with self._tx() as db:
            if db.execute("SELECT 1 FROM documents WHERE document_id=? AND claimed_by=?",
                          (staging.document_id, self.owner)).fetchone() is None:
                raise LeaseLost(staging.document_id)
            row = db.execute(f"SELECT {DOC_COLUMNS}, claimed_by, lease_until FROM documents "
                             "WHERE tenant=? AND document_id=?", (tenant, target)).fetchone()
            if row is None:
                raise LookupError(target)
            if row["claimed_by"] not in (None, self.owner) and (row["lease_until"] or 0) >= now:
                raise TargetBusy(target)
            live = record_from_row(row)
            live_ids = [r[0] for r in db.execute("SELECT chunk_id FROM chunks WHERE document_id=?", (target,))]
            if not set(live_ids) <= set(live_vectors):
                raise TargetBusy(target)
            newest = staging.version > live.version or live.status is not DocumentStatus.READY
            published = DocumentRecord(**{
                **staging.__dict__, "document_id": target, "version_of": "", "key": live.key,
                "status": DocumentStatus.READY, "chunk_count": len(chunks), "graph_sync": graph_sync,
                "create_time": live.create_time, "update_time": now})
            if newest:
                if live.status is DocumentStatus.READY:
                    self._archive_live(db, live, live_ids, live_vectors, now)
                self._replace_live(db, published, sections, chunks)
                leaving = live_ids
            else:  # an older version finished after a newer one went live: straight to the archive
                self._archive_new(db, published, sections, chunks, staged_vectors)
                leaving = [c.chunk_id for c in chunks]
            db.execute(f"INSERT OR REPLACE INTO document_versions ({VERSION_COLUMNS}) "
                       f"VALUES ({placeholders(16)})",
                       version_row(published, embedded, reused, staging.create_time, None if newest else now))
            db.execute("DELETE FROM documents WHERE document_id=?", (staging.document_id,))
            final = db.execute(f"SELECT {DOC_COLUMNS} FROM documents WHERE document_id=?", (target,)).fetchone()
            _bump(db, tenant)
        return leaving, record_from_row(final)

    def _archive_live(self, db: sqlite3.Connection, live: DocumentRecord, live_ids: Sequence[str],
                      vectors: Mapping[str, np.ndarray | None], now: float) -> None:
        document_id = live.document_id
        db.execute(
            f"INSERT OR REPLACE INTO version_chunks ({ARCHIVE_COLUMNS}) SELECT {LIVE_CHUNK}, t.start_seconds, "
            "t.end_seconds, t.time_starts, NULL FROM chunks c LEFT JOIN chunk_times t ON t.chunk_id = c.chunk_id "
            "WHERE c.document_id=?", (document_id,))
        db.executemany("UPDATE version_chunks SET vector=? WHERE chunk_id=?",
                       [(vector_blob(vectors.get(c)), c) for c in live_ids])
        db.execute(f"INSERT OR REPLACE INTO version_sections (document_id, version, position, {SECTION_COLUMNS}) "
                   f"SELECT document_id, ?, position, {SECTION_COLUMNS} FROM sections WHERE document_id=?",
                   (live.version, document_id))
        updated = db.execute("UPDATE document_versions SET superseded_time=? WHERE document_id=? AND version=?",
                             (now, document_id, live.version)).rowcount
        if not updated:  # published before versions existed: its row is written now
            db.execute(f"INSERT INTO document_versions ({VERSION_COLUMNS}) VALUES ({placeholders(16)})",
                       version_row(live, live.chunk_count, 0, live.update_time, now))
        db.execute("DELETE FROM chunks WHERE document_id=?", (document_id,))
        db.execute("DELETE FROM sections WHERE document_id=?", (document_id,))
        timecodes.delete(db, document_id)

    def _replace_live(self, db: sqlite3.Connection, record: DocumentRecord, sections: Sequence[Section],
                      chunks: Sequence[Chunk]) -> None:
        document_id = record.document_id
        db.executemany("INSERT INTO sections VALUES (?,?,?,?,?,?,?)", [
            (document_id, i, s.page, s.sheet_name, json.dumps(list(s.heading_path)),
             json.dumps([list(r) for r in s.row_starts]), s.text) for i, s in enumerate(sections)])
        db.executemany(f"INSERT INTO chunks ({CHUNK_INSERT_COLUMNS}) VALUES ({placeholders(16)})",
                       [chunk_values(c, document_id) for c in chunks])
        timecodes.write(db, document_id, chunks)
        db.execute(
            "UPDATE documents SET filename=?, file_type=?, content_type=?, content_sha256=?, size_bytes=?, status=?, "
            "error_message='', page_count=?, sheet_names=?, chunk_count=?, graph_sync=?, title=?, update_time=?, "
            "version=?, claimed_by=NULL, lease_until=NULL WHERE document_id=?",
            (record.filename, record.file_type, record.content_type, record.content_sha256, record.size_bytes, READY,
             record.page_count, json.dumps(list(record.sheet_names)), len(chunks), int(record.graph_sync),
             record.title, record.update_time, record.version, document_id))

    def _archive_new(self, db: sqlite3.Connection, record: DocumentRecord, sections: Sequence[Section],
                     chunks: Sequence[Chunk], vectors: Mapping[str, np.ndarray | None]) -> None:
        db.executemany(f"INSERT OR REPLACE INTO version_chunks ({ARCHIVE_COLUMNS}) VALUES ({placeholders(20)})",
                       archive_rows(chunks, vectors, record.document_id))
        db.executemany(
            f"INSERT OR REPLACE INTO version_sections (document_id, version, position, {SECTION_COLUMNS}) "
            "VALUES (?,?,?,?,?,?,?,?)",
            [(record.document_id, record.version, i, s.page, s.sheet_name, json.dumps(list(s.heading_path)),
              json.dumps([list(r) for r in s.row_starts]), s.text) for i, s in enumerate(sections)])

    # -- reads ------------------------------------------------------------------------------
    def versions(self, tenant: str, document_id: str) -> list[DocumentVersion]:
        """Every version of the document, newest first (empty: no such document)."""
        with self._lock:
            live = self._conn.execute(f"SELECT {DOC_COLUMNS} FROM documents WHERE tenant=? AND document_id=? "
                                      "AND version_of=''", (tenant, document_id)).fetchone()
            if live is None:
                return []
            rows = self._conn.execute(f"SELECT {VERSION_COLUMNS} FROM document_versions WHERE document_id=?",
                                      (document_id,)).fetchall()
            staging = self._conn.execute(f"SELECT {DOC_COLUMNS} FROM documents WHERE tenant=? AND version_of=?",
                                         (tenant, document_id)).fetchall()
        return merge_versions([version_from_row(r) for r in rows], record_from_row(live),
                              [record_from_row(r) for r in staging])

    def version_sections(self, tenant: str, document_id: str, version: int) -> list[Section]:
        """The extracted text of an archived version (the live one's is ``sections``)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT s.page, s.sheet_name, s.heading_path, s.row_starts, s.text FROM version_sections s "
                "JOIN documents d ON d.document_id = s.document_id WHERE d.tenant=? AND s.document_id=? "
                "AND s.version=? ORDER BY s.position", (tenant, document_id, version)).fetchall()
        return [section_from_row(r) for r in rows]

    def archived_chunks(self, tenant: str, document_id: str, version: int) -> list[Chunk]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {ARCHIVED_CHUNK} FROM version_chunks a WHERE a.tenant=? AND a.document_id=? "
                "AND a.version=? ORDER BY a.ordinal", (tenant, document_id, version)).fetchall()
        return [_archived_chunk(r) for r in rows]

    def archived_chunks_by_id(self, tenant: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Archived chunks of this tenant with these ids (citations of earlier versions), in no order."""
        found: list[Chunk] = []
        ids = list(dict.fromkeys(chunk_ids))
        for start in range(0, len(ids), 500):
            batch = ids[start:start + 500]
            with self._lock:
                rows = self._conn.execute(
                    f"SELECT {ARCHIVED_CHUNK} FROM version_chunks a WHERE a.tenant=? "
                    f"AND a.chunk_id IN ({placeholders(len(batch))})", (tenant, *batch)).fetchall()
            found.extend(_archived_chunk(r) for r in rows)
        return found

    def archived_vectors(self, tenant: str, document_id: str, version: int | None = None) -> list[StoredVector]:
        """Texts and vectors of the document's archived chunks (of one version, or all)."""
        sql = "SELECT chunk_id, text, vector FROM version_chunks WHERE tenant=? AND document_id=?"
        args: list = [tenant, document_id]
        if version is not None:
            sql += " AND version=?"
            args.append(version)
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY version, ordinal", args).fetchall()
        return [stored_vector(r) for r in rows]

    def live_chunk_texts(self, tenant: str, document_id: str) -> list[tuple[str, str]]:
        """(chunk id, text) of the document's live chunks, READY or not (what a new version may reuse)."""
        with self._lock:
            return [(r[0], r[1]) for r in self._conn.execute(
                "SELECT chunk_id, text FROM chunks WHERE +tenant=? AND document_id=? ORDER BY ordinal",
                (tenant, document_id))]

    def version_shas(self, tenant: str, document_id: str) -> set[str]:
        """The content hashes of every version of the document (live, archived, staged)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT content_sha256 FROM documents WHERE tenant=? AND (document_id=? OR version_of=?) "
                "UNION SELECT content_sha256 FROM document_versions WHERE tenant=? AND document_id=?",
                (tenant, document_id, document_id, tenant, document_id)).fetchall()
        return {r[0] for r in rows}

    def content_in_use(self, tenant: str, content_sha256: str) -> bool:
        """Whether any document or version of the tenant still has these bytes (their blob must stay)."""
        with self._lock:
            return self._conn.execute(
                "SELECT 1 FROM documents WHERE tenant=? AND content_sha256=? UNION ALL "
                "SELECT 1 FROM document_versions WHERE tenant=? AND content_sha256=? LIMIT 1",
                (tenant, content_sha256, tenant, content_sha256)).fetchone() is not None

    def versioned_documents(self, tenant: str, limit: int = 200) -> list[DocumentRecord]:
        """The tenant's documents that have more than one version, most recently changed first."""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {DOC_COLUMNS} FROM documents WHERE tenant=? AND version_of='' AND version > 1 "
                "ORDER BY update_time DESC LIMIT ?", (tenant, limit)).fetchall()
        return [record_from_row(r) for r in rows]

    def archived_texts(self, tenant: str) -> list[tuple[str, str]]:
        """(chunk id, text) of every archived chunk of the tenant (a re-embedding after a model change)."""
        with self._lock:
            return [(r[0], r[1]) for r in self._conn.execute(
                "SELECT chunk_id, text FROM version_chunks WHERE tenant=? ORDER BY chunk_id", (tenant,))]

    def set_archived_vectors(self, tenant: str, chunk_ids: Sequence[str], vectors: np.ndarray) -> None:
        with self._tx() as db:
            db.executemany("UPDATE version_chunks SET vector=? WHERE tenant=? AND chunk_id=?",
                           [(vector_blob(v), tenant, c) for c, v in zip(chunk_ids, vectors, strict=True)])

    def archive_tenants(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT DISTINCT tenant FROM version_chunks")]

    def delete_versions(self, db: sqlite3.Connection, tenant: str, document_id: str) -> None:
        """Inside ``delete_document``'s transaction: the archive, the version rows and staging rows."""
        db.execute("DELETE FROM version_chunks WHERE tenant=? AND document_id=?", (tenant, document_id))
        db.execute("DELETE FROM version_sections WHERE document_id=?", (document_id,))
        db.execute("DELETE FROM document_versions WHERE document_id=?", (document_id,))
        db.execute("DELETE FROM documents WHERE tenant=? AND version_of=?", (tenant, document_id))

    def write_version_row(self, db: sqlite3.Connection, record: DocumentRecord, chunks: int) -> None:
        """Inside a publication: the live version's row (a re-index rewrites its counts)."""
        published = DocumentRecord(**{**record.__dict__, "chunk_count": chunks})
        db.execute(f"INSERT INTO document_versions ({VERSION_COLUMNS}) VALUES ({placeholders(16)}) "
                   f"ON CONFLICT (document_id, version) DO UPDATE SET {REPUBLISHED}",
                   version_row(published, chunks, 0, record.create_time if record.version == 1 else time.time()))


def _archived_chunk(row: sqlite3.Row) -> Chunk:
    return timecodes.timed(chunk_from_row(row), row)


def _bump(db: sqlite3.Connection, tenant: str) -> None:
    db.execute("INSERT INTO generations (tenant, generation) VALUES (?, 1) "
               "ON CONFLICT(tenant) DO UPDATE SET generation = generation + 1", (tenant,))
