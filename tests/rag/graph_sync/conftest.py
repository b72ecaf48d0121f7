"""Fixtures of the graph-feed tests: a real metadata store and outbox over one temporary file, or over one
PostgreSQL database when the module runs on both backends (``store_backend``)."""

from __future__ import annotations

import pathlib

import pytest

from services.rag.documents import DocumentRecord, GraphSyncState, Section
from services.rag.graph_sync.outbox import GraphOutbox
from services.rag.store import MetadataStore
from services.storage.settings import StorageSettings
from tests.support import records


class Stores:
    """MetadataStore and GraphOutbox on one database; ``reopen`` is a process restart."""

    def __init__(self, path: pathlib.Path, storage: StorageSettings) -> None:
        self.path = path
        self.storage = storage
        self.metadata, self.outbox = self._open()

    def _open(self):
        if not self.storage.postgres:
            return MetadataStore(self.path), GraphOutbox(self.path)
        from services.rag.graph_sync.pg_outbox import PostgresGraphOutbox
        from services.rag.store.pg_metadata import PostgresMetadataStore
        from services.storage.postgres import shared

        db = shared(self.storage.dsn())
        return PostgresMetadataStore(db), PostgresGraphOutbox(db)

    def reopen(self) -> None:
        self.close()
        self.metadata, self.outbox = self._open()

    def close(self) -> None:
        self.outbox.close()
        self.metadata.close()

    def add_ready(self, tenant: str, document_id: str, text: str, title: str = "",
                  graph_sync: GraphSyncState = GraphSyncState.PENDING) -> DocumentRecord:
        """A READY document with one section (published as ingestion does, without chunks)."""
        record = records.document(text, tenant=tenant, document_id=document_id, filename=f"{document_id}.md",
                                  file_type="markdown", content_type="text/markdown", content_sha256=document_id * 2,
                                  graph_sync=graph_sync, title=title)
        self.metadata.upsert_document(record)
        self.metadata.publish(record, [Section(text=text)], [], graph_sync)
        return self.metadata.get_document(tenant, document_id)


@pytest.fixture
def stores(tmp_path: pathlib.Path, storage):
    opened = Stores(tmp_path / "metadata.sqlite3", storage)
    yield opened
    try:
        opened.close()
    except Exception:  # noqa: BLE001 - a test closed it already
        pass
