"""The chunk index on PostgreSQL: pgvector for dense search, full-text search for keywords.

Vectors live in ``rag_vectors`` (one table for every embedding model, told apart by
``collection``); each collection gets a partial HNSW index on ``embedding::vector(D)`` with
cosine distance. Embeddings are L2-normalised, so ``1 - cosine distance`` is the inner product
the embedded FAISS index scores with. Every read joins the chunk rows and the document's READY
status in the same statement, so staged vectors stay invisible until ``publish`` commits, as in
the embedded index.

HNSW filters after the index scan: a tenant with few chunks among many may get fewer than ``k``
nearest ones from the ``ef_search`` candidates. Such a search is redone exactly (ordering by an
expression the index cannot serve), as is every search restricted to a list of documents.

Keyword search, by default (``DOCUTHINKER_POSTGRES_KEYWORD=bm25``), is the embedded BM25 index
kept by each replica as a cache of the database: every search compares the tenant's generation
counter (in the database) with the one the cache was built from and rebuilds a stale cache
first, so a replica never ranks chunks another replica has removed, and ranking equals the
embedded backend's. ``fts`` uses PostgreSQL full text instead (``english`` configuration:
stemming and stop words) with the query's words OR-ed, ranked by ``ts_rank`` normalised by
document length (flag 1): always current with nothing to rebuild, but unlike BM25 there is no
inverse document frequency (a rare word counts as much as a common one) and term frequency
saturates logarithmically rather than with BM25's k1 (0.025 lower nDCG@10 on SciFact).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from psycopg import sql

from services.rag.documents import Chunk, DocumentRecord, GraphSyncState, Section
from services.rag.store.pg_metadata import PostgresMetadataStore
from services.rag.store.rows import READY
from services.rag.store.vectors import collection_name, in_progress
from services.storage.postgres import Postgres, advisory_lock

INDEX_LOCK = 0x646F6376  # advisory lock key: one replica at a time creates a collection's HNSW index
EMBEDDER_LOCK = 0x646F6377  # advisory lock key: one replica at a time checks or re-indexes the collection
_BATCH = 1000


class PostgresVectors:
    """The vectors of one embedding model (a collection), in ``rag_vectors``; ``rag_vector_sets`` records
    which embedder wrote them (``services.rag.reindex.reindex_shared`` checks it at startup)."""

    def __init__(self, db: Postgres, model_name: str, dimension: int, ef_search: int = 100,
                 identity: str | None = None) -> None:
        self._db = db
        self.dimension = dimension
        self.collection = collection_name(model_name, dimension)
        self.identity = identity or model_name
        self._ef_search = ef_search
        self._typed = sql.SQL("v.embedding::vector({})").format(sql.Literal(dimension))
        self._query = sql.SQL("%s::vector({})").format(sql.Literal(dimension))
        self._create_index()

    def _create_index(self) -> None:
        name = "rag_vectors_hnsw_" + hashlib.sha1(self.collection.encode()).hexdigest()[:16]
        statement = sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON rag_vectors USING hnsw ((embedding::vector({})) vector_cosine_ops) "
            "WHERE collection = {}"
        ).format(sql.Identifier(name), sql.Literal(self.dimension), sql.Literal(self.collection))
        with self._db.connection() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (INDEX_LOCK,))
            conn.execute(statement)

    def exclusive(self):
        """Held by one replica at a time (a context manager): the embedder check and any re-index."""
        return advisory_lock(self._db.dsn, EMBEDDER_LOCK)

    def recorded_identity(self, legacy_identity: str | None = None) -> str:
        """The embedder the collection's vectors are of. A collection written before embedders were
        recorded holds ``legacy_identity``'s vectors (default: this store's) and is stamped so now."""
        with self._db.connection() as conn:
            row = conn.execute("SELECT embedder FROM rag_vector_sets WHERE collection=%s",
                               (self.collection,)).fetchone()
            if row is not None:
                return str(row["embedder"])
            written = conn.execute("SELECT 1 FROM rag_vectors WHERE collection=%s LIMIT 1",
                                   (self.collection,)).fetchone()
            recorded = (legacy_identity or self.identity) if written else self.identity
            conn.execute("INSERT INTO rag_vector_sets (collection, embedder) VALUES (%s, %s) "
                         "ON CONFLICT (collection) DO NOTHING", (self.collection, recorded))
        return recorded

    def reset(self) -> None:
        """Drops the collection's vectors; it is stamped as mid-re-index until ``mark_complete``."""
        with self._db.connection() as conn:
            conn.execute("DELETE FROM rag_vectors WHERE collection=%s", (self.collection,))
            self._stamp(conn, in_progress(self.identity))

    def mark_complete(self) -> None:
        """Stamps the collection with this store's identity: every vector in it is this embedder's."""
        with self._db.connection() as conn:
            self._stamp(conn, self.identity)

    def _stamp(self, conn, embedder: str) -> None:
        conn.execute("INSERT INTO rag_vector_sets (collection, embedder) VALUES (%s, %s) "
                     "ON CONFLICT (collection) DO UPDATE SET embedder = excluded.embedder", (self.collection, embedder))

    def flush(self) -> None:
        """Nothing to write at shutdown: every add or remove is committed in its own transaction (the embedded
        store snapshots its HNSW indexes here)."""

    def add(self, tenant: str, document_id: str, chunk_ids: Sequence[str], vectors: np.ndarray) -> None:
        if not chunk_ids:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        with self._db.connection() as conn, conn.cursor() as cur:
            for start in range(0, len(chunk_ids), _BATCH):
                cur.executemany(
                    "INSERT INTO rag_vectors (collection, tenant, chunk_id, document_id, embedding) "
                    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (collection, tenant, chunk_id) "
                    "DO UPDATE SET embedding = excluded.embedding, document_id = excluded.document_id",
                    [(self.collection, tenant, chunk_id, document_id, vector)
                     for chunk_id, vector in zip(chunk_ids[start:start + _BATCH], vectors[start:start + _BATCH],
                                                 strict=True)],
                )

    def remove(self, tenant: str, chunk_ids: Sequence[str]) -> None:
        if not chunk_ids:
            return
        with self._db.connection() as conn:
            conn.execute("DELETE FROM rag_vectors WHERE tenant=%s AND chunk_id = ANY(%s)", (tenant, list(chunk_ids)))

    def vectors_of(self, tenant: str, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these chunks in this collection (ids without one are absent)."""
        if not chunk_ids:
            return {}
        with self._db.connection() as conn:
            rows = conn.execute("SELECT chunk_id, embedding FROM rag_vectors WHERE collection=%s AND tenant=%s "
                                "AND chunk_id = ANY(%s)", (self.collection, tenant, list(chunk_ids))).fetchall()
        return {r["chunk_id"]: _array(r["embedding"]) for r in rows}

    def stored_ids(self, tenant: str, document_id: str | None = None) -> list[str]:
        query = "SELECT chunk_id FROM rag_vectors WHERE collection=%s AND tenant=%s"
        args: list = [self.collection, tenant]
        if document_id is not None:
            query += " AND document_id=%s"
            args.append(document_id)
        with self._db.connection() as conn:
            return [r["chunk_id"] for r in conn.execute(query, args)]

    def search(
        self, tenant: str, vector: np.ndarray, k: int, document_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """(chunk id, cosine) of the tenant's visible chunks, best first."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        exact = document_ids is not None
        rows = self._search(tenant, query, k, document_ids, exact)
        if len(rows) < k and not exact:
            rows = self._search(tenant, query, k, None, exact=True)
        return rows

    def _search(self, tenant: str, query: np.ndarray, k: int, document_ids: Sequence[str] | None,
                exact: bool) -> list[tuple[str, float]]:
        distance = sql.SQL("({} <=> {})").format(self._typed, self._query)
        # "+ 0" hides the ordering from the HNSW index: the planner then ranks every candidate row.
        order = sql.SQL("{} + 0").format(distance) if exact else distance
        where = sql.SQL("")
        args: list = [query, self.collection, tenant, READY]
        if document_ids is not None:
            where = sql.SQL(" AND c.document_id = ANY(%s)")
            args.append(list(document_ids))
        args += [query, k]
        statement = sql.SQL(
            "SELECT c.chunk_id, 1 - {distance} AS score FROM rag_vectors v "
            "JOIN rag_chunks c ON c.tenant = v.tenant AND c.chunk_id = v.chunk_id "
            "JOIN rag_documents d ON d.tenant = c.tenant AND d.document_id = c.document_id "
            "WHERE v.collection = %s AND v.tenant = %s AND d.status = %s{where} "
            "ORDER BY {order} LIMIT %s"
        ).format(distance=distance, where=where, order=order)
        with self._db.connection() as conn:
            conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(
                sql.Literal(max(self._ef_search, 2 * k))))
            rows = conn.execute(statement, args).fetchall()
        return [(r["chunk_id"], float(r["score"])) for r in rows]


def _array(value) -> np.ndarray:
    """An untyped ``vector`` column comes back as pgvector's ``Vector``, not as an array."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


class FullTextKeywords:
    """Keyword search over the chunks' ``tsvector`` column (GIN index); always current."""

    def __init__(self, db: Postgres) -> None:
        self._db = db

    def refresh(self, tenant: str) -> bool:
        """Nothing to rebuild: the text index is updated in the transaction that publishes chunks."""
        return False

    def is_fresh(self, tenant: str) -> bool:
        return True

    def search(
        self, tenant: str, query: str, k: int, document_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        if k <= 0 or not query.strip():
            return []
        where, args = "", [query, tenant, READY]
        if document_ids is not None:
            where = " AND c.document_id = ANY(%s)"
            args.append(list(document_ids))
        args.append(k)
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT c.chunk_id, ts_rank(c.tsv, q.query, 1) AS score "
                "FROM (SELECT replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')::tsquery AS query) q, "
                "rag_chunks c JOIN rag_documents d ON d.tenant = c.tenant AND d.document_id = c.document_id "
                f"WHERE c.tenant = %s AND d.status = %s AND c.tsv @@ q.query{where} "
                "ORDER BY score DESC, c.seq LIMIT %s",
                args,
            ).fetchall()
        return [(r["chunk_id"], float(r["score"])) for r in rows if r["score"] > 0]


class Bm25Keywords:
    """The embedded BM25 index as a per-replica cache of the database's visible chunks."""

    def __init__(self, index, metadata: PostgresMetadataStore, lock=None) -> None:
        self._index = index
        self._metadata = metadata
        self._lock = lock
        """The process's hold on the cache directory (released when the process ends)."""

    def refresh(self, tenant: str) -> bool:
        return self._index.refresh(tenant)

    def is_fresh(self, tenant: str) -> bool:
        return self._index.is_fresh(tenant)

    def search(
        self, tenant: str, query: str, k: int, document_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        allowed = None
        if document_ids is not None:
            allowed = set(self._metadata.visible_chunk_ids(tenant, document_ids))
            if not allowed:
                return []
        return self._index.search(tenant, query, k, allowed)


class PostgresChunkIndex:
    """The ``ChunkIndex`` of retrieval and ingestion, on the shared database (see the module doc)."""

    def __init__(self, metadata: PostgresMetadataStore, vectors: PostgresVectors,
                 keyword: FullTextKeywords | Bm25Keywords) -> None:
        self.metadata = metadata
        self.vectors = vectors
        self.keyword = keyword

    # -- reads -----------------------------------------------------------------------
    def dense_search(
        self, tenant: str, query_vector: np.ndarray, k: int, document_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        if k <= 0 or (document_ids is not None and not document_ids):
            return []
        return self.vectors.search(tenant, query_vector, k, document_ids)

    def keyword_search(
        self, tenant: str, query: str, k: int, document_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        if document_ids is not None and not document_ids:
            return []
        return self.keyword.search(tenant, query, k, document_ids)

    def get_chunks(self, tenant: str, ids: Sequence[str]) -> list[Chunk]:
        return self.metadata.get_chunks(tenant, ids)

    def document_chunks(self, tenant: str, document_id: str) -> list[Chunk]:
        return self.metadata.document_chunks(tenant, document_id)

    # -- writes ----------------------------------------------------------------------
    def stage_vectors(self, tenant: str, document_id: str, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Writes vectors; they stay invisible until ``publish`` (searches join READY chunk rows)."""
        self.vectors.add(tenant, document_id, [c.chunk_id for c in chunks], vectors)

    def publish(
        self, record: DocumentRecord, sections: Sequence[Section], chunks: Sequence[Chunk], graph_sync: GraphSyncState
    ) -> None:
        self.metadata.publish(record, sections, chunks, graph_sync)  # drops vanished chunks' vectors too

    def discard(self, tenant: str, document_id: str, staged_ids: Sequence[str]) -> None:
        old = self.metadata.clear_chunks(tenant, document_id)
        self.vectors.remove(tenant, sorted(set(old) | set(staged_ids)))

    def remove_document(self, tenant: str, document_id: str) -> int:
        """Deletes the document, its chunks and every vector it wrote, in one transaction."""
        return len(self.metadata.delete_document(tenant, document_id))
