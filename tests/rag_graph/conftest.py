"""Fixtures of the graph-feed tests: a real metadata store and outbox over one temporary file."""

from __future__ import annotations

import pathlib
import time

import pytest

from services.rag.documents import DocumentRecord, DocumentStatus, GraphSyncState, Section
from services.rag.graph_sync.outbox import GraphOutbox
from services.rag.store import MetadataStore


class Stores:
    """MetadataStore and GraphOutbox on one database file; ``reopen`` is a process restart."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path
        self.metadata = MetadataStore(path)
        self.outbox = GraphOutbox(path)

    def reopen(self) -> None:
        self.close()
        self.metadata = MetadataStore(self.path)
        self.outbox = GraphOutbox(self.path)

    def close(self) -> None:
        self.outbox.close()
        self.metadata.close()

    def add_ready(self, tenant: str, document_id: str, text: str, title: str = "",
                  graph_sync: GraphSyncState = GraphSyncState.PENDING) -> DocumentRecord:
        """A READY document with one section (published as ingestion does, without chunks)."""
        now = time.time()
        record = DocumentRecord(
            document_id=document_id, tenant=tenant, filename=f"{document_id}.md", file_type="markdown",
            content_type="text/markdown", content_sha256=document_id * 2, size_bytes=len(text),
            status=DocumentStatus.PENDING, create_time=now, update_time=now, graph_sync=graph_sync, title=title,
        )
        self.metadata.upsert_document(record)
        self.metadata.publish(record, [Section(text=text)], [], graph_sync)
        return self.metadata.get_document(tenant, document_id)


@pytest.fixture
def stores(tmp_path: pathlib.Path):
    opened = Stores(tmp_path / "metadata.sqlite3")
    yield opened
    try:
        opened.close()
    except Exception:  # noqa: BLE001 - a test closed it already
        pass
