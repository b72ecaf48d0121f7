"""Original uploads in PostgreSQL (``rag_blobs``, ``bytea``), so every replica can re-read them.

Same port as ``BlobStore``: by tenant and content hash, whole or absent (one statement each).
"""

from __future__ import annotations

from services.storage.postgres import Postgres


class PostgresBlobStore:
    def __init__(self, db: Postgres) -> None:
        self._db = db

    def put(self, tenant: str, content_sha256: str, data: bytes) -> None:
        with self._db.connection() as conn:
            conn.execute(
                "INSERT INTO rag_blobs (tenant, content_sha256, data) VALUES (%s, %s, %s) "
                "ON CONFLICT (tenant, content_sha256) DO NOTHING",
                (tenant, content_sha256, data),
            )

    def get(self, tenant: str, content_sha256: str) -> bytes | None:
        with self._db.connection() as conn:
            row = conn.execute("SELECT data FROM rag_blobs WHERE tenant=%s AND content_sha256=%s",
                               (tenant, content_sha256)).fetchone()
        return bytes(row["data"]) if row else None

    def exists(self, tenant: str, content_sha256: str) -> bool:
        with self._db.connection() as conn:
            return conn.execute("SELECT 1 FROM rag_blobs WHERE tenant=%s AND content_sha256=%s",
                                (tenant, content_sha256)).fetchone() is not None

    def delete(self, tenant: str, content_sha256: str) -> None:
        with self._db.connection() as conn:
            conn.execute("DELETE FROM rag_blobs WHERE tenant=%s AND content_sha256=%s", (tenant, content_sha256))
