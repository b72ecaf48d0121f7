"""Wiring of sources into a rag replica: the store of the chosen backend, the credential box, the connectors,
the engine over the replica's pipeline and catalog, the scheduler, and the metrics read at scrape time."""

from __future__ import annotations

import asyncio
import pathlib
from dataclasses import dataclass

from services.rag.catalog import DocumentCatalog
from services.rag.ingest.pipeline import IngestionPipeline
from services.rag.sources.connect import Connectors
from services.rag.sources.engine import SyncEngine
from services.rag.sources.model import SourceState
from services.rag.sources.scheduler import SourceScheduler
from services.rag.sources.secrets import CredentialBox
from services.rag.sources.service import SourceService
from services.rag.sources.settings import SourcesSettings
from services.runtime.domain_metrics import register_state
from services.storage.settings import StorageSettings


@dataclass
class SourcesLink:
    store: object
    service: SourceService
    scheduler: SourceScheduler
    settings: SourcesSettings
    task: asyncio.Task | None = None

    @classmethod
    def open(cls, data_dir: pathlib.Path, storage: StorageSettings, settings: SourcesSettings,
             pipeline: IngestionPipeline, catalog: DocumentCatalog) -> SourcesLink:
        """Blocking (run it in a thread): opens the store (migrated with the rest on PostgreSQL)."""
        data_dir = pathlib.Path(data_dir)
        store: object
        if storage.postgres:
            from services.rag.sources.pg_store import PostgresSourceStore
            from services.storage.postgres import shared

            store = PostgresSourceStore(shared(storage.dsn(), storage.postgres_pool_size), lease_s=settings.lease_s)
        else:
            from services.rag.sources.store import SqliteSourceStore

            store = SqliteSourceStore(data_dir / "rag" / "sources.sqlite3", lease_s=settings.lease_s)
        box = CredentialBox.from_file(settings.key_file or data_dir / "auth" / "sources.key")
        roots = list(settings.folder_roots) or [data_dir / "sources"]
        for root in roots:
            if root == data_dir / "sources":
                root.mkdir(parents=True, exist_ok=True)
        connectors = Connectors(settings, box, roots, data_dir / "rag" / "source-cache")
        scheduler = SourceScheduler(store, SyncEngine(store, pipeline, catalog, settings), connectors, settings)
        service = SourceService(store, catalog, box, connectors, settings, wake=scheduler.wake)

        def states():
            counts = store.state_counts()  # type: ignore[attr-defined]
            return [((state.name.lower(),), counts.get(state, 0)) for state in SourceState]

        register_state("docuthinker_sources", "Sources by the state of their last sync (failed: the source could "
                       "not be synced; partial: some items fail).", ["state"], states)
        return cls(store, service, scheduler, settings)

    def start(self) -> None:
        if self.settings.enabled:
            self.task = asyncio.get_running_loop().create_task(self.scheduler.run_forever(), name="source-scheduler")

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
            self.task = None
        await self.scheduler.close()

    def close(self) -> None:
        self.store.close()  # type: ignore[attr-defined]
