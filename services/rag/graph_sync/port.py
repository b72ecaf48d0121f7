"""Port through which ingestion hands a ready document to the knowledge graph.

The real adapter (``services.rag.graph_sync.link.OutboxGraphSync``) queues the document in a
durable outbox that a background worker drains (NLP topics and entities -> graph service);
``DisabledGraphSync`` reports GRAPH_SYNC_STATUS_DISABLED and does nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from services.rag.documents import DocumentRecord, Section


class GraphSync(Protocol):
    @property
    def enabled(self) -> bool:
        """False: documents are recorded as DISABLED and ``sync`` is never called."""
        ...

    async def sync(self, document: DocumentRecord, text_sections: Sequence[Section]) -> bool:
        """Sends the document's facts to the graph; True once synced (False leaves it PENDING)."""
        ...

    async def forget(self, document: DocumentRecord) -> None:
        """The document is being deleted: its facts must leave the graph (called before removal)."""
        ...


class DisabledGraphSync:
    enabled = False

    async def sync(self, document: DocumentRecord, text_sections: Sequence[Section]) -> bool:
        return False

    async def forget(self, document: DocumentRecord) -> None:
        return None
