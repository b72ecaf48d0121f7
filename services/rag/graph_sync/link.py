"""The RAG service's link to the knowledge graph: outbox, worker and the pipeline's ``GraphSync`` port.

Opened before the stores (the port is handed to the pipeline and catalog), started after
them (the worker reads documents and shares the per-document locks), stopped before they
close and closed after. With ``DOCUTHINKER_RAG_GRAPH_SYNC=false`` the port reports disabled
and no worker runs, but deletes of documents the graph may hold are still queued, so
turning the sync back on removes them from the graph.
"""

from __future__ import annotations

import asyncio
import pathlib
import time
from collections.abc import Callable, Sequence

from services.rag.documents import DocumentRecord, GraphSyncState, Section
from services.rag.graph_sync.feed import GraphFeed
from services.rag.graph_sync.outbox import GraphOutbox, Outbox
from services.rag.graph_sync.settings import GraphSyncSettings
from services.rag.graph_sync.worker import DocumentSource, GraphSyncWorker
from services.rag.locks import KeyedLocks
from services.runtime.domain_metrics import register_state
from services.storage.settings import StorageSettings


def register_outbox_metrics(outbox: Outbox) -> None:
    """Outbox depth and the age of its oldest intent, read at scrape time."""
    def read():
        depth, oldest = outbox.depth()
        age = max(0.0, time.time() - oldest) if oldest is not None else 0.0
        return [(("depth",), depth), (("oldest_age_seconds",), age)]

    register_state("docuthinker_graph_outbox", "Graph outbox: intents waiting, and the age of the oldest.",
                   ["quantity"], read)


class OutboxGraphSync:
    """``GraphSync`` through the outbox: ``sync`` queues and returns at once (the document stays
    PENDING until the worker has synced it); ``forget`` queues the graph delete."""

    def __init__(self, outbox: Outbox, enabled: bool, on_queued: Callable[[], None]) -> None:
        self._outbox = outbox
        self._enabled = enabled
        self._on_queued = on_queued

    @property
    def enabled(self) -> bool:
        return self._enabled

    async def sync(self, document: DocumentRecord, text_sections: Sequence[Section]) -> bool:
        # The worker reads the sections back from the metadata store: the outbox stays small.
        await asyncio.to_thread(self._outbox.enqueue_upsert, document.tenant, document.document_id)
        self._on_queued()
        return False

    async def forget(self, document: DocumentRecord) -> None:
        if document.graph_sync is GraphSyncState.DISABLED:
            # Never sent to the graph, unless an upsert queued before the sync was turned off waits.
            if await asyncio.to_thread(self._outbox.get, document.tenant, document.document_id) is None:
                return
        await asyncio.to_thread(self._outbox.enqueue_delete, document.tenant, document.document_id)
        self._on_queued()


class GraphLink:
    def __init__(self, outbox: Outbox, feed: GraphFeed, settings: GraphSyncSettings) -> None:
        self.outbox = outbox
        self._feed = feed
        self._settings = settings
        self.worker: GraphSyncWorker | None = None
        self.port = OutboxGraphSync(outbox, settings.sync, self._notify)
        register_outbox_metrics(outbox)

    @classmethod
    def open(cls, database: pathlib.Path, feed: GraphFeed, settings: GraphSyncSettings,
             storage: StorageSettings) -> GraphLink:
        """Opens the outbox in the RAG metadata database (the SQLite file, or the shared PostgreSQL
        database where every replica's worker claims from one outbox); blocking (run it in a thread)."""
        if storage.postgres:
            from services.rag.graph_sync.pg_outbox import PostgresGraphOutbox
            from services.storage.postgres import shared

            outbox = PostgresGraphOutbox(shared(storage.dsn(), storage.postgres_pool_size),
                                         storage.postgres_outbox_lease_s)
            return cls(outbox, feed, settings)
        return cls(GraphOutbox(database), feed, settings)

    def _notify(self) -> None:
        if self.worker is not None:
            self.worker.notify()

    async def start(self, documents: DocumentSource, locks: KeyedLocks) -> None:
        if not self._settings.sync:
            return
        self.worker = GraphSyncWorker(self.outbox, documents, self._feed, locks, self._settings)
        await self.worker.start()

    async def stop(self) -> None:
        if self.worker is not None:
            await self.worker.stop()
            self.worker = None

    def close(self) -> None:
        self.outbox.close()
