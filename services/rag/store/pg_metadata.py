"""PostgreSQL metadata: the same documents, sections and chunk rows as ``MetadataStore``, shared by replicas.

The commit point of ingestion is the same: a document's chunk rows and its READY status land
in one transaction, and every chunk read joins the documents table on READY. Every statement
names the tenant (the tables are keyed by it), except the two reads by document id that the
port defines without one (``update_document``, ``sections``): document ids are hashes of the
tenant and the content, so they cannot reach another tenant's document.

Ingestion leases (``store.leases``) are timed by the database's clock (``NOW``), so replicas whose
clocks disagree still agree on when a lease has run out; the takeover sweep claims with ``FOR UPDATE
SKIP LOCKED``, so two replicas sweeping at once take different documents and never wait on each other.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence

from services.rag.documents import Chunk, DocumentRecord, DocumentStatus, GraphSyncState, Section
from services.rag.store.leases import LeaseLost
from services.rag.store.pg_versions import PostgresVersions
from services.rag.store.rows import CHUNK_COLUMNS as CHUNK_ROW
from services.rag.store.rows import (
    CHUNK_INSERT_COLUMNS,
    DOC_COLUMNS,
    DOC_VALUES,
    KEYWORD_COLUMNS,
    READY,
    TERMINAL,
    chunk_from_row,
    chunk_values,
    column_updates,
    document_values,
    keyword_text,
    record_from_row,
)
from services.rag.store.timecodes import timed
from services.storage.postgres import Postgres
from services.storage.replica import replica_id

CHUNK_COLUMNS = (
    f"{CHUNK_ROW}, t.start_seconds AS t_start_seconds, t.end_seconds AS t_end_seconds, t.time_starts AS t_time_starts"
)
CHUNKS_READY = (
    "rag_chunks c JOIN rag_documents d ON d.tenant = c.tenant AND d.document_id = c.document_id "
    "LEFT JOIN rag_chunk_times t ON t.tenant = c.tenant AND t.chunk_id = c.chunk_id"
)
NOW = "extract(epoch FROM clock_timestamp())::float8"
"""The database's clock, in the epoch seconds of ``lease_until``."""
CLAIMABLE = f"(d.claimed_by IS NULL OR d.claimed_by = %s OR d.lease_until < {NOW})"
"""Nobody else holds a live lease on document ``d`` (parameter: this store's owner)."""


class PostgresMetadataStore(PostgresVersions):
    """Thread-safe (a connection pool); blocking calls: the event loop uses ``asyncio.to_thread``."""

    def __init__(self, db: Postgres, *, owner: str | None = None, lease_s: float = 30.0) -> None:
        self._db = db
        self.owner = owner or replica_id()
        """Who this store's leases are held by (one per process)."""
        self.lease_s = lease_s
        """How long a claim or a renewal holds a document's lease."""

    def close(self) -> None:
        """The pool is the process's, shared with the other stores in the database: left open."""

    # -- documents -------------------------------------------------------------------
    def upsert_document(self, record: DocumentRecord) -> bool:
        """Inserts a new document, or resets a failed or unfinished one being uploaded again, and claims its
        lease; False (nothing changed) when it is READY or another replica holds a live lease on it."""
        with self._db.connection() as conn:
            return conn.execute(
                f"INSERT INTO rag_documents AS d ({DOC_COLUMNS}, claimed_by, lease_until) "
                f"VALUES ({', '.join(['%s'] * (DOC_VALUES + 1))}, {NOW} + %s) "
                "ON CONFLICT (tenant, document_id) DO UPDATE SET filename=excluded.filename, "
                "file_type=excluded.file_type, content_type=excluded.content_type, status=excluded.status, "
                "content_sha256=excluded.content_sha256, size_bytes=excluded.size_bytes, version=excluded.version, "
                "doc_key=excluded.doc_key, "
                "error_message='', update_time=excluded.update_time, claimed_by=excluded.claimed_by, "
                f"lease_until=excluded.lease_until, parse_attempts=0 WHERE d.status <> %s AND {CLAIMABLE}",
                (*document_values(record), self.owner, self.lease_s, READY, self.owner),
            ).rowcount == 1

    def update_document(self, document_id: str, **fields) -> None:
        """Unconditional (lease or not): for what is not the ingestion's, e.g. the graph-sync state."""
        values = column_updates(fields)
        assignments = ", ".join(f"{k}=%s" for k in values)
        with self._db.connection() as conn:
            row = conn.execute("SELECT tenant, status FROM rag_documents WHERE document_id=%s FOR UPDATE",
                               (document_id,)).fetchone()
            if row is None:
                return
            conn.execute(f"UPDATE rag_documents SET {assignments} WHERE tenant=%s AND document_id=%s",
                         (*values.values(), row["tenant"], document_id))
            # A READY document leaving READY (re-index) hides its chunks: derived indexes must notice.
            if row["status"] == READY and values.get("status", READY) != READY:
                _bump(conn, row["tenant"])

    def get_document(self, tenant: str, document_id: str) -> DocumentRecord | None:
        with self._db.connection() as conn:
            row = conn.execute(f"SELECT {DOC_COLUMNS} FROM rag_documents WHERE tenant=%s AND document_id=%s",
                               (tenant, document_id)).fetchone()
        return record_from_row(row) if row else None

    def list_documents(
        self, tenant: str, limit: int, after: tuple[float, str] | None = None
    ) -> list[DocumentRecord]:
        """Newest first; ``after`` is the (create_time, document_id) of the last row already seen (staging rows
        of versions being ingested left out)."""
        sql = f"SELECT {DOC_COLUMNS} FROM rag_documents WHERE tenant=%s AND version_of=''"
        args: list = [tenant]
        if after is not None:
            sql += " AND (create_time, document_id) < (%s, %s)"
            args += [after[0], after[1]]
        sql += " ORDER BY create_time DESC, document_id DESC LIMIT %s"
        args.append(limit)
        with self._db.connection() as conn:
            return [record_from_row(r) for r in conn.execute(sql, args).fetchall()]

    def count_documents(self, tenant: str) -> int:
        with self._db.connection() as conn:
            return conn.execute("SELECT COUNT(*) AS n FROM rag_documents WHERE tenant=%s AND version_of=''",
                                (tenant,)).fetchone()["n"]

    def count_chunks(self, tenant: str) -> int:
        """Chunks of the tenant's documents (the per-tenant chunk quota counts these)."""
        with self._db.connection() as conn:
            return int(conn.execute("SELECT COALESCE(SUM(chunk_count), 0) AS n FROM rag_documents WHERE tenant=%s",
                                    (tenant,)).fetchone()["n"])

    def unfinished_documents(self) -> list[DocumentRecord]:
        """Documents in a non-terminal status (left behind by a crash), oldest first, of every tenant."""
        with self._db.connection() as conn:
            rows = conn.execute(
                f"SELECT {DOC_COLUMNS} FROM rag_documents WHERE status NOT IN (%s, %s) ORDER BY create_time",
                TERMINAL,
            ).fetchall()
        return [record_from_row(r) for r in rows]

    # -- ingestion leases (see ``store.leases``) --------------------------------------
    def claim_document(self, tenant: str, document_id: str) -> bool:
        """Takes the document's lease (a re-index); False while another replica holds a live one."""
        with self._db.connection() as conn:
            return conn.execute(
                f"UPDATE rag_documents d SET claimed_by=%s, lease_until={NOW} + %s "
                f"WHERE tenant=%s AND document_id=%s AND {CLAIMABLE}",
                (self.owner, self.lease_s, tenant, document_id, self.owner),
            ).rowcount == 1

    def claim_unfinished(self) -> DocumentRecord | None:
        """Claims the oldest unfinished document nobody holds a live lease on (the takeover sweep)."""
        with self._db.connection() as conn:
            row = conn.execute(
                f"UPDATE rag_documents SET claimed_by=%s, lease_until={NOW} + %s WHERE (tenant, document_id) = ("
                "SELECT tenant, document_id FROM rag_documents WHERE status NOT IN (%s, %s) "
                f"AND (claimed_by IS NULL OR lease_until < {NOW}) ORDER BY create_time LIMIT 1 "
                f"FOR UPDATE SKIP LOCKED) RETURNING {DOC_COLUMNS}",
                (self.owner, self.lease_s, *TERMINAL),
            ).fetchone()
        return record_from_row(row) if row else None

    def begin_parse(self, tenant: str, document_id: str) -> int | None:
        """PARSING, one more parse attempt counted (while this replica holds the lease): the attempts so far,
        or None when it does not hold it."""
        with self._db.connection() as conn:
            row = conn.execute(
                "UPDATE rag_documents SET status=%s, parse_attempts=parse_attempts+1, update_time=%s "
                "WHERE tenant=%s AND document_id=%s AND claimed_by=%s RETURNING parse_attempts",
                (int(DocumentStatus.PARSING), time.time(), tenant, document_id, self.owner),
            ).fetchone()
        return None if row is None else int(row["parse_attempts"])

    def parse_attempts(self, tenant: str, document_id: str) -> int:
        """Parses of the document begun and not finished (a parser or a service died while reading it)."""
        with self._db.connection() as conn:
            row = conn.execute("SELECT parse_attempts FROM rag_documents WHERE tenant=%s AND document_id=%s",
                               (tenant, document_id)).fetchone()
        return int(row["parse_attempts"]) if row else 0

    def renew_lease(self, tenant: str, document_id: str) -> bool:
        """Extends this replica's lease; False: it no longer holds it (taken over, or the document is done)."""
        with self._db.connection() as conn:
            return conn.execute(
                f"UPDATE rag_documents SET lease_until={NOW} + %s WHERE tenant=%s AND document_id=%s "
                "AND claimed_by=%s",
                (self.lease_s, tenant, document_id, self.owner),
            ).rowcount == 1

    def release_lease(self, tenant: str, document_id: str) -> None:
        """Lets go of the lease (a shutdown mid-ingestion): any replica's next sweep may take the document."""
        with self._db.connection() as conn:
            conn.execute("UPDATE rag_documents SET claimed_by=NULL, lease_until=NULL "
                         "WHERE tenant=%s AND document_id=%s AND claimed_by=%s", (tenant, document_id, self.owner))

    def lease_holder(self, tenant: str, document_id: str) -> str | None:
        """The replica holding a live lease on the document (None: nobody, or its lease ran out)."""
        with self._db.connection() as conn:
            row = conn.execute(f"SELECT claimed_by FROM rag_documents WHERE tenant=%s AND document_id=%s "
                               f"AND lease_until >= {NOW}", (tenant, document_id)).fetchone()
        return row["claimed_by"] if row else None

    def update_claimed(self, tenant: str, document_id: str, **fields) -> bool:
        """``update_document`` while this replica holds the lease (False: it does not, nothing changed); a
        terminal status ends the lease."""
        values = column_updates(fields, ends_lease=True)
        assignments = ", ".join(f"{k}=%s" for k in values)
        with self._db.connection() as conn:
            row = conn.execute("SELECT status FROM rag_documents WHERE tenant=%s AND document_id=%s "
                               "AND claimed_by=%s FOR UPDATE", (tenant, document_id, self.owner)).fetchone()
            if row is None:
                return False
            conn.execute(f"UPDATE rag_documents SET {assignments} WHERE tenant=%s AND document_id=%s",
                         (*values.values(), tenant, document_id))
            if row["status"] == READY and values.get("status", READY) != READY:
                _bump(conn, tenant)
        return True

    def delete_document(self, tenant: str, document_id: str) -> list[str]:
        """Removes the document, its sections, chunk rows and vectors in one transaction; returns chunk ids."""
        with self._db.connection() as conn:
            ids = _clear(conn, tenant, document_id)
            self.delete_versions(conn, tenant, document_id)
            conn.execute("DELETE FROM rag_vectors WHERE tenant=%s AND document_id=%s", (tenant, document_id))
            gone = conn.execute("DELETE FROM rag_documents WHERE tenant=%s AND document_id=%s", (tenant, document_id))
            if ids or gone.rowcount:
                _bump(conn, tenant)
        return ids

    # -- publication: the commit point of an ingest ----------------------------------
    def publish(
        self,
        record: DocumentRecord,
        sections: Sequence[Section],
        chunks: Sequence[Chunk],
        graph_sync: GraphSyncState,
    ) -> list[str]:
        """Replaces the document's sections and chunks and marks it READY, atomically; returns the
        ids of chunk rows that existed before and are gone now. Raises ``LeaseLost`` (nothing written)
        unless this replica holds the document's lease; the lease ends with it."""
        tenant, document_id = record.tenant, record.document_id
        with self._db.connection() as conn:
            held = conn.execute("SELECT claimed_by FROM rag_documents WHERE tenant=%s AND document_id=%s FOR UPDATE",
                                (tenant, document_id)).fetchone()
            if held is None or held["claimed_by"] != self.owner:
                raise LeaseLost(document_id)
            old = set(_clear(conn, tenant, document_id))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO rag_sections (tenant, document_id, position, page, sheet_name, heading_path, "
                    "row_starts, text) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    [(tenant, document_id, i, s.page, s.sheet_name, json.dumps(list(s.heading_path)),
                      json.dumps([list(r) for r in s.row_starts]), s.text) for i, s in enumerate(sections)],
                )
                cur.executemany(
                    f"INSERT INTO rag_chunks ({CHUNK_INSERT_COLUMNS}) VALUES ({', '.join(['%s'] * 16)})",
                    [chunk_values(c, document_id) for c in chunks],
                )
                cur.executemany(
                    "INSERT INTO rag_chunk_times (tenant, chunk_id, document_id, start_seconds, end_seconds, "
                    "time_starts) VALUES (%s, %s, %s, %s, %s, %s)",
                    [(tenant, c.chunk_id, document_id, c.provenance.start_seconds, c.provenance.end_seconds,
                      json.dumps([list(t) for t in c.provenance.time_starts]))
                     for c in chunks if c.provenance.time_starts],
                )
            conn.execute(
                "UPDATE rag_documents SET status=%s, error_message='', chunk_count=%s, page_count=%s, sheet_names=%s, "
                "title=%s, graph_sync=%s, update_time=%s, claimed_by=NULL, lease_until=NULL "
                "WHERE tenant=%s AND document_id=%s",
                (READY, len(chunks), record.page_count, json.dumps(list(record.sheet_names)), record.title,
                 int(graph_sync), time.time(), tenant, document_id),
            )
            self.write_version_row(conn, record, len(chunks))
            vanished = sorted(old - {c.chunk_id for c in chunks})
            _delete_vectors(conn, tenant, vanished)
            _bump(conn, tenant)
        return vanished

    def clear_chunks(self, tenant: str, document_id: str) -> list[str]:
        """Drops a document's chunk rows and sections (a failed ingest); returns the chunk ids."""
        with self._db.connection() as conn:
            ids = _clear(conn, tenant, document_id)
            if ids:
                _bump(conn, tenant)
        return ids

    def sections(self, document_id: str) -> list[Section]:
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT page, sheet_name, heading_path, row_starts, text FROM rag_sections "
                "WHERE tenant = (SELECT tenant FROM rag_documents WHERE document_id=%s) AND document_id=%s "
                "ORDER BY position",
                (document_id, document_id),
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
        if not chunk_ids:
            return []
        with self._db.connection() as conn:
            rows = conn.execute(
                f"SELECT {CHUNK_COLUMNS} FROM {CHUNKS_READY} "
                "WHERE c.tenant=%s AND c.chunk_id = ANY(%s) AND d.status=%s",
                (tenant, list(dict.fromkeys(chunk_ids)), READY),
            ).fetchall()
        found = {r["chunk_id"]: timed(chunk_from_row(r), r) for r in rows}
        return [found[i] for i in chunk_ids if i in found]

    def document_chunks(self, tenant: str, document_id: str) -> list[Chunk]:
        with self._db.connection() as conn:
            rows = conn.execute(
                f"SELECT {CHUNK_COLUMNS} FROM {CHUNKS_READY} "
                "WHERE c.tenant=%s AND c.document_id=%s AND d.status=%s ORDER BY c.ordinal",
                (tenant, document_id, READY),
            ).fetchall()
        return [timed(chunk_from_row(r), r) for r in rows]

    def visible_chunk_ids(self, tenant: str, document_ids: Iterable[str] | None = None) -> list[str]:
        sql = f"SELECT c.chunk_id FROM {CHUNKS_READY} WHERE c.tenant=%s AND d.status=%s"
        args: list = [tenant, READY]
        if document_ids is not None:
            sql += " AND c.document_id = ANY(%s)"
            args.append(list(document_ids))
        with self._db.connection() as conn:
            return [r["chunk_id"] for r in conn.execute(sql + " ORDER BY c.seq", args)]

    def visible_texts(self, tenant: str) -> tuple[int, list[tuple[str, str]]]:
        """(generation, [(chunk id, text)]) of every visible chunk, read in one snapshot."""
        with self._db.connection() as conn:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            generation = _generation(conn, tenant)
            rows = conn.execute(
                f"SELECT {KEYWORD_COLUMNS} FROM {CHUNKS_READY} WHERE c.tenant=%s AND d.status=%s ORDER BY c.seq",
                (tenant, READY),
            ).fetchall()
        return generation, [(r["chunk_id"], keyword_text(r)) for r in rows]

    def generation(self, tenant: str) -> int:
        with self._db.connection() as conn:
            return _generation(conn, tenant)

    def tenants(self) -> list[str]:
        with self._db.connection() as conn:
            return [r["tenant"] for r in conn.execute("SELECT DISTINCT tenant FROM rag_chunks")]

    def known_chunk_ids(self) -> set[str]:
        """Every chunk row, visible or not."""
        with self._db.connection() as conn:
            return {r["chunk_id"] for r in conn.execute("SELECT chunk_id FROM rag_chunks")}


def _clear(conn, tenant: str, document_id: str) -> list[str]:
    """Deletes the document's chunk rows, time codes and sections; returns the chunk ids."""
    ids = [r["chunk_id"] for r in conn.execute(
        "DELETE FROM rag_chunks WHERE tenant=%s AND document_id=%s RETURNING chunk_id", (tenant, document_id))]
    conn.execute("DELETE FROM rag_chunk_times WHERE tenant=%s AND document_id=%s", (tenant, document_id))
    conn.execute("DELETE FROM rag_sections WHERE tenant=%s AND document_id=%s", (tenant, document_id))
    return ids


def _delete_vectors(conn, tenant: str, chunk_ids: Sequence[str]) -> None:
    if chunk_ids:
        conn.execute("DELETE FROM rag_vectors WHERE tenant=%s AND chunk_id = ANY(%s)", (tenant, list(chunk_ids)))


def _bump(conn, tenant: str) -> None:
    conn.execute(
        "INSERT INTO rag_generations (tenant, generation) VALUES (%s, 1) "
        "ON CONFLICT (tenant) DO UPDATE SET generation = rag_generations.generation + 1",
        (tenant,),
    )


def _generation(conn, tenant: str) -> int:
    row = conn.execute("SELECT generation FROM rag_generations WHERE tenant=%s", (tenant,)).fetchone()
    return int(row["generation"]) if row else 0

