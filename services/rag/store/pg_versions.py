"""Document versions in the PostgreSQL metadata store: the statements of ``sqlite_versions`` on the shared
database (the rules are there). Leases are timed by the database's clock; the staging row and the document
are locked (``FOR UPDATE``) while a version is numbered or promoted, so replicas racing on one document
serialise there."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence

import numpy as np

from services.rag.documents import Chunk, DocumentRecord, DocumentStatus, GraphSyncState, Section
from services.rag.store.leases import LeaseLost
from services.rag.store.rows import (
    CHUNK_INSERT_COLUMNS,
    DOC_COLUMNS,
    READY,
    VERSION_COLUMNS,
    chunk_from_row,
    chunk_values,
    document_values,
    record_from_row,
)
from services.rag.store.timecodes import timed
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
from services.storage.postgres import Postgres

NOW = "extract(epoch FROM clock_timestamp())::float8"


def _marks(n: int) -> str:
    return ", ".join(["%s"] * n)


class PostgresVersions:
    """Mixed into ``PostgresMetadataStore``."""

    owner: str
    lease_s: float
    _db: Postgres

    def claim_version(self, record: DocumentRecord) -> DocumentRecord | None:
        """See ``SqliteVersions.claim_version``."""
        tenant = record.tenant
        with self._db.connection() as conn:
            target = conn.execute("SELECT version FROM rag_documents WHERE tenant=%s AND document_id=%s "
                                  "AND version_of='' FOR UPDATE", (tenant, record.version_of)).fetchone()
            if target is None:
                raise LookupError(record.version_of)
            row = conn.execute(f"SELECT version, claimed_by, lease_until >= {NOW} AS live FROM rag_documents "
                               "WHERE tenant=%s AND document_id=%s FOR UPDATE",
                               (tenant, record.document_id)).fetchone()
            if row is not None:
                if row["claimed_by"] not in (None, self.owner) and row["live"]:
                    return None
                claimed = conn.execute(
                    f"UPDATE rag_documents SET status=%s, error_message='', filename=%s, content_type=%s, "
                    f"update_time=%s, claimed_by=%s, lease_until={NOW} + %s WHERE tenant=%s AND document_id=%s "
                    f"RETURNING {DOC_COLUMNS}",
                    (int(DocumentStatus.PENDING), record.filename, record.content_type, time.time(), self.owner,
                     self.lease_s, tenant, record.document_id)).fetchone()
                return record_from_row(claimed)
            number = 1 + max(
                target["version"],
                conn.execute("SELECT COALESCE(MAX(version), 0) AS n FROM rag_document_versions "
                             "WHERE tenant=%s AND document_id=%s", (tenant, record.version_of)).fetchone()["n"],
                conn.execute("SELECT COALESCE(MAX(version), 0) AS n FROM rag_documents WHERE tenant=%s "
                             "AND version_of=%s", (tenant, record.version_of)).fetchone()["n"],
            )
            now = time.time()
            staged = DocumentRecord(**{**record.__dict__, "version": number, "status": DocumentStatus.PENDING,
                                       "create_time": now, "update_time": now})
            conn.execute(f"INSERT INTO rag_documents ({DOC_COLUMNS}, claimed_by, lease_until) "
                         f"VALUES ({_marks(19)}, %s, {NOW} + %s)",
                         (*document_values(staged), self.owner, self.lease_s))
        return staged

    def promote(self, staging: DocumentRecord, sections: Sequence[Section], chunks: Sequence[Chunk],
                graph_sync: GraphSyncState, live_vectors: Mapping[str, np.ndarray | None],
                staged_vectors: Mapping[str, np.ndarray | None], embedded: int,
                reused: int) -> tuple[list[str], DocumentRecord]:
        """See ``SqliteVersions.promote``; the vectors leaving the search index are deleted here too."""
        tenant, target = staging.tenant, staging.version_of
        now = time.time()
        with self._db.connection() as conn:
            held = conn.execute("SELECT claimed_by FROM rag_documents WHERE tenant=%s AND document_id=%s FOR UPDATE",
                                (tenant, staging.document_id)).fetchone()
            if held is None or held["claimed_by"] != self.owner:
                raise LeaseLost(staging.document_id)
            row = conn.execute(f"SELECT {DOC_COLUMNS}, claimed_by, lease_until >= {NOW} AS live FROM rag_documents "
                               "WHERE tenant=%s AND document_id=%s FOR UPDATE", (tenant, target)).fetchone()
            if row is None:
                raise LookupError(target)
            if row["claimed_by"] not in (None, self.owner) and row["live"]:
                raise TargetBusy(target)
            live = record_from_row(row)
            live_ids = [r["chunk_id"] for r in conn.execute(
                "SELECT chunk_id FROM rag_chunks WHERE tenant=%s AND document_id=%s", (tenant, target))]
            if not set(live_ids) <= set(live_vectors):
                raise TargetBusy(target)
            newest = staging.version > live.version or live.status is not DocumentStatus.READY
            published = DocumentRecord(**{
                **staging.__dict__, "document_id": target, "version_of": "", "key": live.key,
                "status": DocumentStatus.READY, "chunk_count": len(chunks), "graph_sync": graph_sync,
                "create_time": live.create_time, "update_time": now})
            if newest:
                if live.status is DocumentStatus.READY:
                    self._archive_live(conn, live, live_ids, live_vectors, now)
                self._replace_live(conn, published, sections, chunks)
                leaving = live_ids
            else:
                self._archive_new(conn, published, sections, chunks, staged_vectors)
                leaving = [c.chunk_id for c in chunks]
            conn.execute(f"INSERT INTO rag_document_versions (tenant, {VERSION_COLUMNS.replace('tenant, ', '')}) "
                         f"VALUES ({_marks(16)}) ON CONFLICT (tenant, document_id, version) DO UPDATE SET "
                         f"{REPUBLISHED}",
                         _tenant_first(version_row(published, embedded, reused, staging.create_time,
                                                   None if newest else now)))
            conn.execute("DELETE FROM rag_documents WHERE tenant=%s AND document_id=%s",
                         (tenant, staging.document_id))
            if leaving:
                conn.execute("DELETE FROM rag_vectors WHERE tenant=%s AND chunk_id = ANY(%s)", (tenant, leaving))
            final = conn.execute(f"SELECT {DOC_COLUMNS} FROM rag_documents WHERE tenant=%s AND document_id=%s",
                                 (tenant, target)).fetchone()
            _bump(conn, tenant)
        return leaving, record_from_row(final)

    def _archive_live(self, conn, live: DocumentRecord, live_ids: Sequence[str],
                      vectors: Mapping[str, np.ndarray | None], now: float) -> None:
        tenant, document_id = live.tenant, live.document_id
        conn.execute(
            f"INSERT INTO rag_version_chunks ({ARCHIVE_COLUMNS}) SELECT {LIVE_CHUNK}, t.start_seconds, "
            "t.end_seconds, t.time_starts, NULL FROM rag_chunks c LEFT JOIN rag_chunk_times t "
            "ON t.tenant = c.tenant AND t.chunk_id = c.chunk_id WHERE c.tenant=%s AND c.document_id=%s "
            "ON CONFLICT (tenant, chunk_id) DO NOTHING", (tenant, document_id))
        with conn.cursor() as cur:
            cur.executemany("UPDATE rag_version_chunks SET vector=%s WHERE tenant=%s AND chunk_id=%s",
                            [(vector_blob(vectors.get(c)), tenant, c) for c in live_ids])
        conn.execute(f"INSERT INTO rag_version_sections (tenant, document_id, version, position, {SECTION_COLUMNS}) "
                     f"SELECT tenant, document_id, %s, position, {SECTION_COLUMNS} FROM rag_sections "
                     "WHERE tenant=%s AND document_id=%s ON CONFLICT DO NOTHING",
                     (live.version, tenant, document_id))
        updated = conn.execute("UPDATE rag_document_versions SET superseded_time=%s WHERE tenant=%s "
                               "AND document_id=%s AND version=%s", (now, tenant, document_id, live.version)).rowcount
        if not updated:
            conn.execute(f"INSERT INTO rag_document_versions (tenant, {VERSION_COLUMNS.replace('tenant, ', '')}) "
                         f"VALUES ({_marks(16)})",
                         _tenant_first(version_row(live, live.chunk_count, 0, live.update_time, now)))
        conn.execute("DELETE FROM rag_chunks WHERE tenant=%s AND document_id=%s", (tenant, document_id))
        conn.execute("DELETE FROM rag_chunk_times WHERE tenant=%s AND document_id=%s", (tenant, document_id))
        conn.execute("DELETE FROM rag_sections WHERE tenant=%s AND document_id=%s", (tenant, document_id))

    def _replace_live(self, conn, record: DocumentRecord, sections: Sequence[Section],
                      chunks: Sequence[Chunk]) -> None:
        tenant, document_id = record.tenant, record.document_id
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO rag_sections (tenant, document_id, position, page, sheet_name, heading_path, "
                "row_starts, text) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                [(tenant, document_id, i, s.page, s.sheet_name, json.dumps(list(s.heading_path)),
                  json.dumps([list(r) for r in s.row_starts]), s.text) for i, s in enumerate(sections)])
            cur.executemany(f"INSERT INTO rag_chunks ({CHUNK_INSERT_COLUMNS}) VALUES ({_marks(16)})",
                            [chunk_values(c, document_id) for c in chunks])
            cur.executemany(
                "INSERT INTO rag_chunk_times (tenant, chunk_id, document_id, start_seconds, end_seconds, "
                "time_starts) VALUES (%s, %s, %s, %s, %s, %s)",
                [(tenant, c.chunk_id, document_id, c.provenance.start_seconds, c.provenance.end_seconds,
                  json.dumps([list(t) for t in c.provenance.time_starts])) for c in chunks if c.provenance.time_starts])
        conn.execute(
            "UPDATE rag_documents SET filename=%s, file_type=%s, content_type=%s, content_sha256=%s, size_bytes=%s, "
            "status=%s, error_message='', page_count=%s, sheet_names=%s, chunk_count=%s, graph_sync=%s, title=%s, "
            "update_time=%s, version=%s, claimed_by=NULL, lease_until=NULL WHERE tenant=%s AND document_id=%s",
            (record.filename, record.file_type, record.content_type, record.content_sha256, record.size_bytes, READY,
             record.page_count, json.dumps(list(record.sheet_names)), len(chunks), int(record.graph_sync),
             record.title, record.update_time, record.version, tenant, document_id))

    def _archive_new(self, conn, record: DocumentRecord, sections: Sequence[Section], chunks: Sequence[Chunk],
                     vectors: Mapping[str, np.ndarray | None]) -> None:
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO rag_version_chunks ({ARCHIVE_COLUMNS}) VALUES ({_marks(20)}) "
                            "ON CONFLICT (tenant, chunk_id) DO NOTHING",
                            archive_rows(chunks, vectors, record.document_id))
            cur.executemany(
                f"INSERT INTO rag_version_sections (tenant, document_id, version, position, {SECTION_COLUMNS}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                [(record.tenant, record.document_id, record.version, i, s.page, s.sheet_name,
                  json.dumps(list(s.heading_path)), json.dumps([list(r) for r in s.row_starts]), s.text)
                 for i, s in enumerate(sections)])

    # -- reads ------------------------------------------------------------------------------
    def versions(self, tenant: str, document_id: str) -> list[DocumentVersion]:
        with self._db.connection() as conn:
            live = conn.execute(f"SELECT {DOC_COLUMNS} FROM rag_documents WHERE tenant=%s AND document_id=%s "
                                "AND version_of=''", (tenant, document_id)).fetchone()
            if live is None:
                return []
            rows = conn.execute(f"SELECT {VERSION_COLUMNS} FROM rag_document_versions WHERE tenant=%s "
                                "AND document_id=%s", (tenant, document_id)).fetchall()
            staging = conn.execute(f"SELECT {DOC_COLUMNS} FROM rag_documents WHERE tenant=%s AND version_of=%s",
                                   (tenant, document_id)).fetchall()
        return merge_versions([version_from_row(r) for r in rows], record_from_row(live),
                              [record_from_row(r) for r in staging])

    def version_sections(self, tenant: str, document_id: str, version: int) -> list[Section]:
        with self._db.connection() as conn:
            rows = conn.execute(f"SELECT {SECTION_COLUMNS} FROM rag_version_sections WHERE tenant=%s "
                                "AND document_id=%s AND version=%s ORDER BY position",
                                (tenant, document_id, version)).fetchall()
        return [section_from_row(r) for r in rows]

    def archived_chunks(self, tenant: str, document_id: str, version: int) -> list[Chunk]:
        with self._db.connection() as conn:
            rows = conn.execute(f"SELECT {ARCHIVED_CHUNK} FROM rag_version_chunks a WHERE a.tenant=%s "
                                "AND a.document_id=%s AND a.version=%s ORDER BY a.ordinal",
                                (tenant, document_id, version)).fetchall()
        return [timed(chunk_from_row(r), r) for r in rows]

    def archived_chunks_by_id(self, tenant: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        if not chunk_ids:
            return []
        with self._db.connection() as conn:
            rows = conn.execute(f"SELECT {ARCHIVED_CHUNK} FROM rag_version_chunks a WHERE a.tenant=%s "
                                "AND a.chunk_id = ANY(%s)", (tenant, list(dict.fromkeys(chunk_ids)))).fetchall()
        return [timed(chunk_from_row(r), r) for r in rows]

    def archived_vectors(self, tenant: str, document_id: str, version: int | None = None) -> list[StoredVector]:
        sql = "SELECT chunk_id, text, vector FROM rag_version_chunks WHERE tenant=%s AND document_id=%s"
        args: list = [tenant, document_id]
        if version is not None:
            sql += " AND version=%s"
            args.append(version)
        with self._db.connection() as conn:
            rows = conn.execute(sql + " ORDER BY version, ordinal", args).fetchall()
        return [stored_vector(r) for r in rows]

    def live_chunk_texts(self, tenant: str, document_id: str) -> list[tuple[str, str]]:
        with self._db.connection() as conn:
            return [(r["chunk_id"], r["text"]) for r in conn.execute(
                "SELECT chunk_id, text FROM rag_chunks WHERE tenant=%s AND document_id=%s ORDER BY ordinal",
                (tenant, document_id))]

    def version_shas(self, tenant: str, document_id: str) -> set[str]:
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT content_sha256 FROM rag_documents WHERE tenant=%s AND (document_id=%s OR version_of=%s) "
                "UNION SELECT content_sha256 FROM rag_document_versions WHERE tenant=%s AND document_id=%s",
                (tenant, document_id, document_id, tenant, document_id)).fetchall()
        return {r["content_sha256"] for r in rows}

    def content_in_use(self, tenant: str, content_sha256: str) -> bool:
        with self._db.connection() as conn:
            return conn.execute(
                "SELECT 1 FROM rag_documents WHERE tenant=%s AND content_sha256=%s UNION ALL "
                "SELECT 1 FROM rag_document_versions WHERE tenant=%s AND content_sha256=%s LIMIT 1",
                (tenant, content_sha256, tenant, content_sha256)).fetchone() is not None

    def versioned_documents(self, tenant: str, limit: int = 200) -> list[DocumentRecord]:
        with self._db.connection() as conn:
            rows = conn.execute(f"SELECT {DOC_COLUMNS} FROM rag_documents WHERE tenant=%s AND version_of='' "
                                "AND version > 1 ORDER BY update_time DESC LIMIT %s", (tenant, limit)).fetchall()
        return [record_from_row(r) for r in rows]

    def archived_texts(self, tenant: str) -> list[tuple[str, str]]:
        with self._db.connection() as conn:
            return [(r["chunk_id"], r["text"]) for r in conn.execute(
                "SELECT chunk_id, text FROM rag_version_chunks WHERE tenant=%s ORDER BY chunk_id", (tenant,))]

    def set_archived_vectors(self, tenant: str, chunk_ids: Sequence[str], vectors: np.ndarray) -> None:
        with self._db.connection() as conn, conn.cursor() as cur:
            cur.executemany("UPDATE rag_version_chunks SET vector=%s WHERE tenant=%s AND chunk_id=%s",
                            [(vector_blob(v), tenant, c) for c, v in zip(chunk_ids, vectors, strict=True)])

    def archive_tenants(self) -> list[str]:
        with self._db.connection() as conn:
            return [r["tenant"] for r in conn.execute("SELECT DISTINCT tenant FROM rag_version_chunks")]

    def delete_versions(self, conn, tenant: str, document_id: str) -> None:
        """Inside ``delete_document``'s transaction: the archive, the version rows and staging rows."""
        conn.execute("DELETE FROM rag_version_chunks WHERE tenant=%s AND document_id=%s", (tenant, document_id))
        conn.execute("DELETE FROM rag_version_sections WHERE tenant=%s AND document_id=%s", (tenant, document_id))
        conn.execute("DELETE FROM rag_document_versions WHERE tenant=%s AND document_id=%s", (tenant, document_id))
        conn.execute("DELETE FROM rag_documents WHERE tenant=%s AND version_of=%s", (tenant, document_id))

    def write_version_row(self, conn, record: DocumentRecord, chunks: int) -> None:
        published = DocumentRecord(**{**record.__dict__, "chunk_count": chunks})
        created = record.create_time if record.version == 1 else time.time()
        conn.execute(f"INSERT INTO rag_document_versions (tenant, {VERSION_COLUMNS.replace('tenant, ', '')}) "
                     f"VALUES ({_marks(16)}) ON CONFLICT (tenant, document_id, version) DO UPDATE SET {REPUBLISHED}",
                     _tenant_first(version_row(published, chunks, 0, created)))


def _tenant_first(row: tuple) -> tuple:
    """A ``version_row`` (document_id, version, tenant, ...) in the PostgreSQL column order (tenant first)."""
    return (row[2], row[0], row[1], *row[3:])


def _bump(conn, tenant: str) -> None:
    conn.execute("INSERT INTO rag_generations (tenant, generation) VALUES (%s, 1) "
                 "ON CONFLICT (tenant) DO UPDATE SET generation = rag_generations.generation + 1", (tenant,))
