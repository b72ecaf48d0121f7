"""What the supervisor learned about a document (summary, key ideas), kept for later chats.

The "store" step of the upload DAG writes here; a chat on that document then gets the summary
as ``<previous_summary>`` context without re-summarising the document.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from services.orchestrator.database import SqlDatabase

_SCHEMA = """
CREATE TABLE IF NOT EXISTS document_insights (
    tenant TEXT NOT NULL,
    document_id TEXT NOT NULL,
    summary TEXT NOT NULL,
    key_ideas TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (tenant, document_id)
);
"""


@dataclass(frozen=True)
class DocumentInsight:
    document_id: str
    summary: str
    key_ideas: tuple[str, ...]
    updated_at: float


class InsightStore:
    def __init__(self, db: SqlDatabase, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock
        db.script(_SCHEMA)

    def save(self, tenant: str, document_id: str, summary: str, key_ideas: Sequence[str]) -> DocumentInsight:
        now = self._clock()
        self._db.execute(
            "INSERT INTO document_insights (tenant, document_id, summary, key_ideas, updated_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant, document_id) DO UPDATE SET summary = excluded.summary,"
            " key_ideas = excluded.key_ideas, updated_at = excluded.updated_at",
            (tenant, document_id, summary, json.dumps(list(key_ideas)), now),
        )
        return DocumentInsight(document_id, summary, tuple(key_ideas), now)

    def get(self, tenant: str, document_id: str) -> DocumentInsight | None:
        row = self._db.one(
            "SELECT * FROM document_insights WHERE tenant = ? AND document_id = ?", (tenant, document_id)
        )
        if row is None:
            return None
        return DocumentInsight(row["document_id"], row["summary"], tuple(json.loads(row["key_ideas"])),
                               row["updated_at"])
