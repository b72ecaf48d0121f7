"""Port through which ingestion hands a ready document's text to the knowledge graph.

The real adapter (streaming topics and entities to the graph service) plugs in here; until
then ``DisabledGraphSync`` reports GRAPH_SYNC_STATUS_DISABLED and does nothing.
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


class DisabledGraphSync:
    enabled = False

    async def sync(self, document: DocumentRecord, text_sections: Sequence[Section]) -> bool:
        return False
