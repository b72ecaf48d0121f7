"""The graph outbox: durable intents, one per document, guarded by sequence."""

from __future__ import annotations

import time

import pytest

from services.rag.documents import GraphSyncState
from services.rag.graph_sync.outbox import Operation

pytestmark = pytest.mark.store_backends  # every test that uses the stores runs on both backends


def test_pending_entries_survive_a_restart(stores) -> None:
    stores.outbox.enqueue_upsert("t1", "doc-a")
    stores.outbox.enqueue_delete("t1", "doc-b")
    entry = stores.outbox.next_due()
    assert entry is not None
    stores.outbox.retry_later(entry, "UNAVAILABLE: graph: connection refused", delay_s=30)

    stores.reopen()

    entries = {e.document_id: e for e in stores.outbox.entries("t1")}
    assert set(entries) == {"doc-a", "doc-b"}
    assert entries["doc-b"].operation is Operation.DELETE
    failed = entries[entry.document_id]
    assert failed.attempts == 1 and failed.last_error.startswith("UNAVAILABLE")
    assert failed.next_attempt_time > time.time() + 25


def test_delete_cancels_a_pending_upsert_and_a_reupload_cancels_the_delete(stores) -> None:
    stores.outbox.enqueue_upsert("t1", "doc")
    stores.outbox.enqueue_delete("t1", "doc")
    [entry] = stores.outbox.entries("t1")
    assert entry.operation is Operation.DELETE

    stores.outbox.enqueue_upsert("t1", "doc")
    [entry] = stores.outbox.entries("t1")
    assert entry.operation is Operation.UPSERT and entry.attempts == 0


def test_work_for_a_replaced_intent_never_completes_the_new_one(stores) -> None:
    stores.add_ready("t1", "doc", "text")
    stores.outbox.enqueue_upsert("t1", "doc")
    read = stores.outbox.next_due()
    stores.outbox.enqueue_delete("t1", "doc")  # the user deleted it while the worker was busy

    assert stores.outbox.complete(read, mark_synced=True) is False
    assert stores.outbox.retry_later(read, "late", 10) is False
    assert stores.outbox.save_facts(read, "{}") is False
    [entry] = stores.outbox.entries("t1")
    assert entry.operation is Operation.DELETE and entry.attempts == 0 and entry.facts is None
    assert stores.metadata.get_document("t1", "doc").graph_sync is GraphSyncState.PENDING


def test_completing_an_upsert_marks_the_document_synced_in_the_same_step(stores) -> None:
    stores.add_ready("t1", "doc", "text")
    stores.outbox.enqueue_upsert("t1", "doc")
    entry = stores.outbox.next_due()
    assert stores.outbox.complete(entry, mark_synced=True) is True
    assert stores.outbox.entries() == []
    assert stores.metadata.get_document("t1", "doc").graph_sync is GraphSyncState.SYNCED


def test_a_disabled_document_is_never_marked_synced(stores) -> None:
    stores.add_ready("t1", "doc", "text", graph_sync=GraphSyncState.DISABLED)
    stores.outbox.enqueue_upsert("t1", "doc")
    assert stores.outbox.complete(stores.outbox.next_due(), mark_synced=True) is True
    assert stores.metadata.get_document("t1", "doc").graph_sync is GraphSyncState.DISABLED


def test_entries_fall_due_in_time_order(stores) -> None:
    stores.outbox.enqueue_upsert("t1", "first")
    stores.outbox.enqueue_upsert("t1", "second")
    first = stores.outbox.next_due()
    assert first.document_id == "first"
    stores.outbox.defer(first, 60)
    assert stores.outbox.next_due().document_id == "second"
    stores.outbox.complete(stores.outbox.next_due(), mark_synced=False)
    assert stores.outbox.next_due() is None
    assert stores.outbox.next_attempt_time() > time.time() + 55
    assert stores.outbox.next_due(now=time.time() + 61).document_id == "first"


def test_facts_are_kept_until_the_intent_changes(stores) -> None:
    stores.outbox.enqueue_upsert("t1", "doc")
    entry = stores.outbox.next_due()
    assert stores.outbox.save_facts(entry, '{"topics": [], "entities": []}')
    assert stores.outbox.get("t1", "doc").facts is not None
    stores.outbox.enqueue_upsert("t1", "doc")  # re-indexed: new content, facts to extract again
    assert stores.outbox.get("t1", "doc").facts is None


def test_reconcile_requeues_ready_pending_documents_without_an_entry(stores) -> None:
    stores.add_ready("t1", "lost", "text")  # crashed between publish and enqueue
    stores.add_ready("t1", "queued", "text")
    stores.add_ready("t1", "synced", "text", graph_sync=GraphSyncState.SYNCED)
    stores.add_ready("t2", "off", "text", graph_sync=GraphSyncState.DISABLED)
    stores.outbox.enqueue_upsert("t1", "queued")
    before = stores.outbox.get("t1", "queued").sequence

    assert stores.outbox.reconcile() == 1
    assert {e.document_id for e in stores.outbox.entries()} == {"lost", "queued"}
    assert stores.outbox.get("t1", "queued").sequence == before
    assert stores.outbox.reconcile() == 0


def test_tenants_do_not_share_entries(stores) -> None:
    stores.outbox.enqueue_upsert("t1", "doc")
    stores.outbox.enqueue_delete("t2", "doc")
    assert [e.operation for e in stores.outbox.entries("t1")] == [Operation.UPSERT]
    assert [e.operation for e in stores.outbox.entries("t2")] == [Operation.DELETE]
