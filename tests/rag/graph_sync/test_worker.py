"""The graph-sync worker over a real metadata store and outbox, with fakes at the NLP and graph ports."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from services.rag.documents import DocumentStatus, GraphSyncState
from services.rag.graph_sync.feed import GraphFeed
from services.rag.graph_sync.outbox import Operation
from services.rag.graph_sync.settings import GraphSyncSettings
from services.rag.graph_sync.worker import GraphSyncWorker
from services.rag.locks import KeyedLocks
from services.runtime.backoff import Backoff
from services.runtime.errors import DeadlineExceeded

from .fakes import GRAPH_DOWN, FakeExtractor, FakeWriter

pytestmark = pytest.mark.store_backends  # every test that uses the stores runs on both backends

TEXT = ("Turbine maintenance crews inspect turbine blades every spring. The report from Ada covers "
        "corrosion, and Grace reviewed the corrosion findings with Ada.")


class Harness:
    def __init__(self, stores, **settings) -> None:
        self.stores = stores
        self.extractor = FakeExtractor()
        self.writer = FakeWriter()
        self.locks = KeyedLocks()
        self.settings = GraphSyncSettings(**{"poll_interval_s": 0.05, "backoff_initial_s": 0.2,
                                             "backoff_max_s": 1.0, **settings})
        exact = Backoff(self.settings.backoff_initial_s, self.settings.backoff_max_s, jitter=0)  # tests time it
        self.worker = GraphSyncWorker(stores.outbox, stores.metadata,
                                      GraphFeed(self.extractor, self.writer, self.settings), self.locks, self.settings,
                                      exact)


@pytest.fixture
def harness(stores):
    return Harness(stores)


async def test_worker_syncs_a_document_in_its_tenant_and_marks_it_synced(harness) -> None:
    harness.stores.add_ready("acme", "doc", TEXT, title="Turbines")
    harness.stores.outbox.enqueue_upsert("acme", "doc")

    assert await harness.worker.run_once() is True

    [upsert] = harness.writer.upserts
    assert upsert["tenant"] == "acme" and upsert["document_id"] == "doc" and upsert["title"] == "Turbines"
    assert upsert["file_type"] == "markdown"
    assert upsert["topics"][:2] == [("corrosion", 1.0), ("turbine", 0.95)] and len(upsert["topics"]) == 10
    assert ("Ada", "PERSON", 2) in upsert["entities"] and ("Grace", "PERSON", 1) in upsert["entities"]
    assert set(harness.extractor.tenants) == {"acme"}
    assert harness.stores.metadata.get_document("acme", "doc").graph_sync is GraphSyncState.SYNCED
    assert harness.stores.outbox.entries() == []
    assert await harness.worker.run_once() is False


async def test_graph_outage_keeps_the_entry_pending_with_backoff_and_reuses_the_facts(harness) -> None:
    harness.stores.add_ready("acme", "doc", TEXT)
    harness.stores.outbox.enqueue_upsert("acme", "doc")
    harness.writer.failure = GRAPH_DOWN

    for attempt, delay in ((1, 0.2), (2, 0.4), (3, 0.8), (4, 1.0)):
        started = time.time()
        assert await harness.worker.run_once() is True
        entry = harness.stores.outbox.get("acme", "doc")
        assert entry.attempts == attempt and entry.last_error.startswith("UNAVAILABLE: graph")
        assert started + delay - 0.05 <= entry.next_attempt_time <= time.time() + delay + 0.05
        assert harness.stores.outbox.next_due(now=entry.next_attempt_time - 0.01) is None  # not due before
        await asyncio.sleep(max(0.0, entry.next_attempt_time - time.time()) + 0.01)
    assert harness.stores.metadata.get_document("acme", "doc").graph_sync is GraphSyncState.PENDING

    harness.writer.failure = None
    assert await harness.worker.run_once() is True
    assert harness.stores.metadata.get_document("acme", "doc").graph_sync is GraphSyncState.SYNCED
    # NLP ran once: the facts it found before the outage were kept for the retries.
    assert [kind for kind, _ in harness.extractor.calls] == ["topics", "entities"]
    assert len(harness.writer.upserts) == 1


async def test_nlp_outage_is_retried_too(harness) -> None:
    harness.stores.add_ready("acme", "doc", TEXT)
    harness.stores.outbox.enqueue_upsert("acme", "doc")
    harness.extractor.failure = DeadlineExceeded("nlp: deadline exceeded")
    await harness.worker.run_once()
    entry = harness.stores.outbox.get("acme", "doc")
    assert entry.attempts == 1 and entry.facts is None and "DEADLINE_EXCEEDED" in entry.last_error
    assert harness.writer.upserts == []


async def test_delete_removes_the_document_from_the_graph(harness) -> None:
    harness.stores.outbox.enqueue_upsert("acme", "doc")
    harness.stores.outbox.enqueue_delete("acme", "doc")  # the document is gone from the metadata store
    await harness.worker.run_once()
    assert harness.writer.deletes == [("acme", "doc")] and harness.writer.upserts == []
    assert harness.stores.outbox.entries() == []


async def test_a_delete_whose_document_survived_becomes_a_resync(harness) -> None:
    harness.stores.add_ready("acme", "doc", TEXT, graph_sync=GraphSyncState.SYNCED)
    harness.stores.outbox.enqueue_delete("acme", "doc")  # crashed before removing the document
    await harness.worker.run_once()
    assert harness.writer.deletes == []
    [entry] = harness.stores.outbox.entries()
    assert entry.operation is Operation.UPSERT


async def test_busy_documents_are_deferred_not_raced(harness) -> None:
    harness.stores.add_ready("acme", "doc", TEXT)
    harness.stores.outbox.enqueue_upsert("acme", "doc")
    async with harness.locks.hold("doc"):  # a re-index or delete in progress
        await harness.worker.run_once()
    entry = harness.stores.outbox.get("acme", "doc")
    assert entry.attempts == 0 and entry.next_attempt_time > time.time()
    assert harness.extractor.calls == [] and harness.writer.upserts == []


async def test_a_failed_document_leaves_the_graph(harness) -> None:
    harness.stores.add_ready("acme", "doc", TEXT)
    harness.stores.metadata.update_document("doc", status=DocumentStatus.FAILED)
    harness.stores.outbox.enqueue_upsert("acme", "doc")
    await harness.worker.run_once()
    assert harness.writer.deletes == [("acme", "doc")] and harness.stores.outbox.entries() == []


async def test_an_empty_document_syncs_its_node_without_calling_nlp(harness) -> None:
    harness.stores.add_ready("acme", "scan", "   ")
    harness.stores.outbox.enqueue_upsert("acme", "scan")
    await harness.worker.run_once()
    assert harness.extractor.calls == []
    assert harness.writer.upserts[0]["topics"] == [] and harness.writer.upserts[0]["entities"] == []
    assert harness.stores.metadata.get_document("acme", "scan").graph_sync is GraphSyncState.SYNCED


async def test_started_worker_drains_on_notify_and_resumes_after_a_restart(stores) -> None:
    first = Harness(stores)
    first.writer.failure = GRAPH_DOWN
    stores.add_ready("acme", "a", TEXT)
    stores.add_ready("acme", "b", TEXT + " Lovelace wrote more.")  # PENDING, never queued: reconciled
    stores.outbox.enqueue_upsert("acme", "a")
    await first.worker.start()
    await _until(lambda: all(e.attempts >= 1 for e in stores.outbox.entries()) and len(stores.outbox.entries()) == 2)
    await first.worker.stop()

    stores.reopen()  # a restart of the service: the pending entries are still there
    second = Harness(stores)
    await second.worker.start()
    try:
        await _until(lambda: not stores.outbox.entries())
        assert {u["document_id"] for u in second.writer.upserts} == {"a", "b"}
        stores.add_ready("acme", "c", TEXT)
        stores.outbox.enqueue_upsert("acme", "c")
        second.worker.notify()
        await _until(lambda: stores.metadata.get_document("acme", "c").graph_sync is GraphSyncState.SYNCED)
    finally:
        await second.worker.stop()
    assert all(stores.metadata.get_document("acme", d).graph_sync is GraphSyncState.SYNCED for d in "abc")


async def _until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


async def test_a_running_worker_picks_up_documents_whose_enqueue_was_lost(stores, monkeypatch) -> None:
    monkeypatch.setattr("services.rag.graph_sync.worker.RECONCILE_EVERY_S", 0.2)
    harness = Harness(stores)
    await harness.worker.start()
    try:
        stores.add_ready("acme", "lost", TEXT)  # READY and PENDING, but its enqueue failed
        await _until(lambda: stores.metadata.get_document("acme", "lost").graph_sync is GraphSyncState.SYNCED)
    finally:
        await harness.worker.stop()


class ManualClock:
    """A monotonic clock that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def _looks_again(harness: Harness) -> None:
    """Wakes the worker and returns once it has read the clock again and held back (or, wrongly, synced)."""
    before = harness.worker.held_back
    harness.worker.notify()
    await _until(lambda: harness.worker.held_back > before or bool(harness.writer.upserts))


async def test_the_worker_holds_back_while_documents_are_ingested_but_never_for_ever(stores) -> None:
    clock = ManualClock()
    # Binary fractions, so the sums below reach the thresholds exactly.
    harness = Harness(stores, ingestion_quiet_s=0.25, yield_to_ingestion_max_s=1.0)
    harness.locks = KeyedLocks(clock)
    harness.worker = GraphSyncWorker(stores.outbox, stores.metadata,
                                     GraphFeed(harness.extractor, harness.writer, harness.settings),
                                     harness.locks, harness.settings)
    stores.add_ready("acme", "doc", TEXT)
    stores.outbox.enqueue_upsert("acme", "doc")
    await harness.worker.start()
    try:
        async with harness.locks.hold("a-document-being-ingested"):
            await _looks_again(harness)  # the first look starts the hold-back
            for _ in range(3):  # looks after 0.25, 0.5, 0.75 s of ingestion: still held back
                clock.advance(0.25)
                await _looks_again(harness)
                assert harness.writer.upserts == [] and harness.extractor.tenants == []
            clock.advance(0.25)  # 1.0 s held back in a row: one document goes through though still busy
            harness.worker.notify()
            await _until(lambda: stores.metadata.get_document("acme", "doc").graph_sync is GraphSyncState.SYNCED)
            assert len(harness.writer.upserts) == 1

        # The lock above was released just now: the next document waits for a quiet period first.
        stores.add_ready("acme", "later", TEXT)
        stores.outbox.enqueue_upsert("acme", "later")
        await _looks_again(harness)
        clock.advance(0.125)
        await _looks_again(harness)
        assert len(harness.writer.upserts) == 1
        clock.advance(0.125)
        harness.worker.notify()
        await _until(lambda: len(harness.writer.upserts) == 2)
    finally:
        await harness.worker.stop()
    assert stores.outbox.get("acme", "doc") is None and stores.outbox.get("acme", "later") is None


class FlippablePeers:
    """The feed's health port: down until the test says the peers serve again."""

    def __init__(self) -> None:
        self.up = False
        self.checks = 0

    async def serving(self) -> bool:
        self.checks += 1
        return self.up


async def test_worker_resumes_within_a_watch_interval_when_peers_come_back_not_at_the_end_of_backoff(stores) -> None:
    # Ten minutes of backoff: every wait below is for a condition (bounded by _until's deadline), and the only
    # way the entry syncs within them is the health watch.
    harness = Harness(stores, backoff_initial_s=600.0, backoff_max_s=1200.0, poll_interval_s=0.05,
                      peer_watch_interval_s=0.05)
    peers = FlippablePeers()
    harness.worker = GraphSyncWorker(stores.outbox, stores.metadata,
                                     GraphFeed(harness.extractor, harness.writer, harness.settings, peers),
                                     harness.locks, harness.settings)
    stores.add_ready("acme", "doc", TEXT)
    stores.outbox.enqueue_upsert("acme", "doc")
    harness.writer.failure = GRAPH_DOWN
    await harness.worker.start()
    try:
        # The first attempt fails and backs off; the worker watches its peers' health during the outage.
        await _until(lambda: (entry := stores.outbox.get("acme", "doc")) is not None and entry.attempts == 1,
                     timeout=30)
        assert stores.outbox.get("acme", "doc").next_attempt_time > time.time() + 300
        checks = peers.checks
        await _until(lambda: peers.checks >= checks + 2, timeout=30)
        assert stores.metadata.get_document("acme", "doc").graph_sync is GraphSyncState.PENDING

        harness.writer.failure = None
        peers.up = True
        await _until(lambda: stores.metadata.get_document("acme", "doc").graph_sync is GraphSyncState.SYNCED,
                     timeout=30)
        assert stores.outbox.entries() == []
    finally:
        await harness.worker.stop()


async def test_worker_without_a_health_port_keeps_its_backoff(stores) -> None:
    harness = Harness(stores, backoff_initial_s=60.0, backoff_max_s=120.0, peer_watch_interval_s=0.05)
    stores.add_ready("acme", "doc", TEXT)
    stores.outbox.enqueue_upsert("acme", "doc")
    harness.writer.failure = GRAPH_DOWN
    assert await harness.worker.run_once() is True
    harness.writer.failure = None
    await harness.worker.start()
    try:
        await asyncio.sleep(0.3)
        assert stores.outbox.get("acme", "doc").attempts == 1  # still waiting: nothing said the peers are back
    finally:
        await harness.worker.stop()


async def test_entities_are_cleaned_in_a_worker_thread_not_on_the_event_loop(monkeypatch) -> None:
    # The cleaning reads the whole text: on the loop it held rag's RPCs, health checks and SIGTERM (18 s once).
    from services.rag.documents import Section
    from services.rag.graph_sync import feed as feed_module

    threads: list[int] = []

    def recording(entities, text):
        threads.append(threading.get_ident())
        return list(entities)

    monkeypatch.setattr(feed_module, "clean_entities", recording)
    feed = GraphFeed(FakeExtractor(), FakeWriter(), GraphSyncSettings())
    await feed.extract("acme", [Section("Ada Lovelace wrote the notes on the Analytical Engine in London.")])
    assert threads and threading.get_ident() not in threads
