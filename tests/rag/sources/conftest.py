"""A sources stack over a real rag runtime (real stores, the fake embedder) and the real servers."""

from __future__ import annotations

import asyncio
import os
import pathlib
from dataclasses import dataclass

import pytest

from services.rag.runtime import RagRuntime
from services.rag.settings import RagSettings
from services.rag.sources.connect import Connectors
from services.rag.sources.engine import SyncEngine
from services.rag.sources.secrets import CredentialBox
from services.rag.sources.service import SourceDraft, SourceService, SourceView
from services.rag.sources.settings import SourcesSettings
from services.rag.sources.store import SqliteSourceStore
from services.storage.settings import StorageSettings
from tests.rag.fakes import HashEmbedder

from .servers import Dovecot

TENANT = "acme"


class NoLease:
    def check(self) -> None:
        return None

    def settle(self) -> None:
        return None


@dataclass
class Stack:
    runtime: RagRuntime
    store: SqliteSourceStore
    service: SourceService
    engine: SyncEngine
    connectors: Connectors
    roots: pathlib.Path
    box: CredentialBox

    async def create(self, name: str, kind, config: dict, credential: str = "", **extra) -> str:
        view = await self.service.create(TENANT, SourceDraft(name=name, kind=kind, config=config,
                                                             credential=credential, **extra))
        return view.record.source_id

    async def sync(self, source_id: str) -> SourceView:
        """Asks for a sync and runs it here (as the scheduler would, without its timing)."""
        await self.service.sync(TENANT, source_id)
        claimed = await asyncio.to_thread(self.store.claim_due)
        assert claimed is not None and claimed.source_id == source_id
        await self.engine.sync(claimed, self.connectors.open(claimed), NoLease())
        return await self.service.get(TENANT, source_id)

    def documents(self) -> list:
        return self.runtime.metadata.list_documents(TENANT, 1000)


@pytest.fixture
async def stack(tmp_path: pathlib.Path):
    runtime = RagRuntime.open(tmp_path / "data", RagSettings(keyword_refresh_delay_s=0.0), 4 * 1024 * 1024,
                              HashEmbedder(), storage=StorageSettings())
    roots = tmp_path / "roots"
    roots.mkdir()
    settings = SourcesSettings(folder_roots=[roots], item_backoff_initial_s=0.2, run_backoff_initial_s=0.2,
                               network_timeout_s=5.0)
    store = SqliteSourceStore(tmp_path / "sources.sqlite3", lease_s=30)
    box = CredentialBox(os.urandom(32))
    connectors = Connectors(settings, box, [roots], tmp_path / "cache")
    engine = SyncEngine(store, runtime.pipeline, runtime.catalog, settings)
    service = SourceService(store, runtime.catalog, box, connectors, settings)
    yield Stack(runtime, store, service, engine, connectors, roots, box)
    await runtime.close()
    store.close()


@pytest.fixture
def dovecot():
    server = Dovecot().start()
    yield server
    server.remove()
