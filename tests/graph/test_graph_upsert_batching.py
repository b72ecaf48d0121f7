"""Stream assembly and batching, against a recording store at the port boundary."""

from __future__ import annotations

import math

import pytest

from services.graph.store import DocumentFacts
from services.graph.upsert_batching import UpsertBatcher
from services.runtime.errors import InvalidArgument


class RecordingStore:
    """Test double of GraphStore.upsert: records each transaction's documents."""

    backend = "recording"

    def __init__(self) -> None:
        self.batches: list[list[DocumentFacts]] = []

    async def upsert(self, tenant: str, documents):
        self.batches.append(list(documents))


def batcher(store, batch_facts=100, max_facts=50) -> UpsertBatcher:
    return UpsertBatcher(store, "t", batch_facts, max_facts)


async def test_facts_are_resolved_and_merged_within_a_document():
    store = RecordingStore()
    b = batcher(store)
    await b.start_document(" d1 ", "  My   Title ", "PDF")
    b.add_topic("Machine Learning", 0.3)
    b.add_topic("machine-learning", 0.9)
    b.add_topic("Graphs", 0)
    b.add_entity("Apple Inc.", "org", 2)
    b.add_entity("APPLE", "", 0)
    summary = await b.finish()
    (doc,) = store.batches[0]
    assert (doc.document_id, doc.title, doc.file_type) == ("d1", "My Title", "pdf")
    assert [(t.key, t.name, t.weight) for t in doc.topics] == [
        ("machine learning", "Machine Learning", 0.9), ("graphs", "Graphs", 1.0)
    ]
    assert [(e.key, e.name, e.type, e.count) for e in doc.entities] == [("apple", "Apple Inc.", "ORG", 3)]
    assert (summary.documents, summary.topics, summary.entities, summary.batches) == (1, 2, 1, 1)


async def test_batches_hold_whole_documents():
    store = RecordingStore()
    b = batcher(store, batch_facts=10)
    for i in range(7):
        await b.start_document(f"d{i}", "", "")
        for j in range(3):
            b.add_topic(f"topic {j}", 0.5)
    summary = await b.finish()
    assert [len(batch) for batch in store.batches] == [3, 3, 1]  # 4 writes per document, flushed at >= 10
    assert summary.batches == 3 and summary.documents == 7


async def test_a_restarted_document_replaces_its_pending_version():
    store = RecordingStore()
    b = batcher(store)
    await b.start_document("d1", "first", "")
    b.add_topic("a", 1)
    await b.start_document("d1", "second", "")
    b.add_topic("b", 1)
    await b.finish()
    (doc,) = store.batches[0]
    assert (doc.title, [t.key for t in doc.topics]) == ("second", ["b"])


async def test_empty_stream_writes_nothing():
    store = RecordingStore()
    summary = await batcher(store).finish()
    assert store.batches == [] and summary.documents == 0


async def test_invalid_facts_are_refused_with_field_violations():
    b = batcher(RecordingStore(), max_facts=2)
    with pytest.raises(InvalidArgument) as orphan:
        b.add_topic("x", 1)
    assert orphan.value.reason == "FACT_WITHOUT_DOCUMENT"
    with pytest.raises(InvalidArgument) as empty_id:
        await b.start_document("  ", "", "")
    assert empty_id.value.violations[0].field == "document.document_id"
    await b.start_document("d", "", "")
    for bad_weight in (-1.0, math.nan, math.inf):
        with pytest.raises(InvalidArgument):
            b.add_topic("x", bad_weight)
    with pytest.raises(InvalidArgument) as no_name:
        b.add_entity("?!", "ORG", 1)
    assert no_name.value.violations[0].field == "entity.name"
    with pytest.raises(InvalidArgument):
        b.add_entity("Bob", "PERSON", -2)
    b.add_topic("one", 1)
    b.add_entity("two", "", 1)
    with pytest.raises(InvalidArgument):
        b.add_topic("three", 1)
