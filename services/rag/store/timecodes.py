"""Time-coded provenance of transcript chunks, in a table of its own beside ``chunks``.

Only chunks of recordings have a row (start/end seconds and the segments they touch), so other
documents cost nothing, and a database created before recordings existed gains the table with
``CREATE TABLE IF NOT EXISTS`` at open: no migration of ``chunks`` is needed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import replace

from services.rag.documents import Chunk

SCHEMA = """
CREATE TABLE IF NOT EXISTS chunk_times (
    chunk_id TEXT PRIMARY KEY,
    document_id TEXT NOT NULL,
    start_seconds REAL NOT NULL,
    end_seconds REAL NOT NULL,
    time_starts TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunk_times_by_document ON chunk_times (document_id);
"""


def write(db: sqlite3.Connection, document_id: str, chunks: Sequence[Chunk]) -> None:
    """Replaces the document's rows (inside the caller's transaction)."""
    delete(db, document_id)
    db.executemany(
        "INSERT INTO chunk_times VALUES (?,?,?,?,?)",
        [(c.chunk_id, document_id, c.provenance.start_seconds, c.provenance.end_seconds,
          json.dumps([list(t) for t in c.provenance.time_starts]))
         for c in chunks if c.provenance.time_starts],
    )


def delete(db: sqlite3.Connection, document_id: str) -> None:
    db.execute("DELETE FROM chunk_times WHERE document_id=?", (document_id,))


def attach(db: sqlite3.Connection, chunks: list[Chunk]) -> list[Chunk]:
    """The chunks with their time ranges filled in (those of recordings)."""
    if not chunks:
        return chunks
    times: dict[str, sqlite3.Row] = {}
    ids = [c.chunk_id for c in chunks]
    for start in range(0, len(ids), 500):
        batch = ids[start:start + 500]
        rows = db.execute(
            f"SELECT chunk_id, start_seconds, end_seconds, time_starts FROM chunk_times "
            f"WHERE chunk_id IN ({','.join('?' * len(batch))})", batch).fetchall()
        times.update((row[0], row) for row in rows)
    if not times:
        return chunks
    return [_timed(c, times[c.chunk_id]) if c.chunk_id in times else c for c in chunks]


def _timed(chunk: Chunk, row) -> Chunk:
    provenance = replace(chunk.provenance, start_seconds=row[1], end_seconds=row[2],
                         time_starts=tuple((int(o), float(s), float(e)) for o, s, e in json.loads(row[3])))
    return replace(chunk, provenance=provenance)
