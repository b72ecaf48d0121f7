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


COLUMNS = "t.start_seconds AS t_start_seconds, t.end_seconds AS t_end_seconds, t.time_starts AS t_time_starts"
"""Select these with ``JOIN`` in a query of ``chunks c``, then pass each row to ``timed``."""
JOIN = "LEFT JOIN chunk_times t ON t.chunk_id = c.chunk_id"


def timed(chunk: Chunk, row: sqlite3.Row) -> Chunk:
    """The chunk with its time range filled in from its row (unchanged when it is not a recording's)."""
    if row["t_time_starts"] is None:
        return chunk
    provenance = replace(
        chunk.provenance, start_seconds=row["t_start_seconds"], end_seconds=row["t_end_seconds"],
        time_starts=tuple((int(o), float(s), float(e)) for o, s, e in json.loads(row["t_time_starts"])))
    return replace(chunk, provenance=provenance)
