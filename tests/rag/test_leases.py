"""Ingestion leases (#16) on both metadata backends: claim, renew, expiry, takeover, and writes conditional on
holding the lease; then the pipeline holding a lease by heartbeat, and a stalled replica's takeover (PostgreSQL:
two runtimes on one database are two replicas; the embedded store belongs to one process)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from services.rag.documents import (
    DocumentRecord,
    DocumentStatus,
    GraphSyncState,
    Section,
)
from services.rag.store.leases import LeaseLost
from services.rag.store.metadata import MetadataStore
from services.runtime.errors import Aborted
from tests.support import records

from .fakes import GatedEmbedder
from .probes import collect

pytestmark = pytest.mark.store_backends("embedded", "postgres")


@pytest.fixture
def open_store(storage, tmp_path):
    """Metadata stores on one database, one per "replica" (``owner``)."""
    opened = []

    def factory(owner: str, lease_s: float = 30.0):
        if storage.postgres:
            from services.rag.store.pg_metadata import PostgresMetadataStore
            from services.storage.postgres import shared

            store = PostgresMetadataStore(shared(storage.dsn()), owner=owner, lease_s=lease_s)
        else:
            store = MetadataStore(tmp_path / "metadata.sqlite3", owner=owner, lease_s=lease_s)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


def _record(text: str = "turbine blades", tenant: str = "acme") -> DocumentRecord:
    return records.document(text, tenant=tenant)


def _publish(store, record: DocumentRecord, text: str = "turbine blades") -> None:
    store.publish(record, [Section(text=text)], records.chunks_of(record, [text]), GraphSyncState.DISABLED)


def test_the_uploader_holds_the_lease_and_another_replica_cannot_take_it(open_store) -> None:
    a, b = open_store("replica-a"), open_store("replica-b")
    record = _record()
    assert a.upsert_document(record)
    assert a.lease_holder("acme", record.document_id) == "replica-a"
    assert not b.upsert_document(record)  # the same bytes uploaded to another replica: it waits instead
    assert not b.claim_document("acme", record.document_id)
    assert b.claim_unfinished() is None  # a starting replica's sweep leaves a live lease alone
    assert a.renew_lease("acme", record.document_id) and not b.renew_lease("acme", record.document_id)
    assert not b.update_claimed("acme", record.document_id, status=DocumentStatus.EMBEDDING)
    assert a.update_claimed("acme", record.document_id, status=DocumentStatus.EMBEDDING)
    assert a.get_document("acme", record.document_id).status is DocumentStatus.EMBEDDING


def test_an_expired_lease_is_taken_over_and_the_old_holder_can_neither_mark_nor_publish(open_store) -> None:
    a, b = open_store("replica-a", lease_s=0.3), open_store("replica-b", lease_s=30)
    record = _record()
    assert a.upsert_document(record)
    assert a.update_claimed("acme", record.document_id, status=DocumentStatus.EMBEDDING)
    time.sleep(0.5)  # replica a stops renewing (it died, or it stalled)
    assert a.lease_holder("acme", record.document_id) is None
    taken = b.claim_unfinished()
    assert taken is not None and taken.document_id == record.document_id
    assert taken.status is DocumentStatus.EMBEDDING
    assert b.lease_holder("acme", record.document_id) == "replica-b"
    assert b.claim_unfinished() is None  # the only unfinished document is held now
    # The old holder wakes up: every write of its ingestion is refused, and nothing is published twice.
    assert not a.renew_lease("acme", record.document_id)
    assert not a.update_claimed("acme", record.document_id, status=DocumentStatus.FAILED, error_message="late")
    with pytest.raises(LeaseLost):
        _publish(a, record)
    assert a.get_document("acme", record.document_id).status is DocumentStatus.EMBEDDING
    assert a.document_chunks("acme", record.document_id) == []
    _publish(b, record)
    done = b.get_document("acme", record.document_id)
    assert done.status is DocumentStatus.READY and done.chunk_count == 1
    assert b.lease_holder("acme", record.document_id) is None  # READY ends the lease
    assert len(b.document_chunks("acme", record.document_id)) == 1


def test_a_lapsed_lease_nobody_took_is_still_its_holders(open_store) -> None:
    a = open_store("replica-a", lease_s=0.2)
    record = _record()
    assert a.upsert_document(record)
    time.sleep(0.3)
    assert a.renew_lease("acme", record.document_id)  # a slow heartbeat, no takeover: carry on
    _publish(a, record)
    assert a.get_document("acme", record.document_id).status is DocumentStatus.READY


def test_released_and_terminal_documents(open_store) -> None:
    a, b = open_store("replica-a"), open_store("replica-b")
    first, second = _record("first document"), _record("second document")
    assert a.upsert_document(first) and a.upsert_document(second)
    a.release_lease("acme", first.document_id)  # a shutdown lets go: the next sweep anywhere may resume it
    assert b.claim_unfinished().document_id == first.document_id
    assert a.update_claimed("acme", second.document_id, status=DocumentStatus.FAILED, error_message="bad")
    assert a.lease_holder("acme", second.document_id) is None
    assert b.claim_unfinished() is None  # FAILED is terminal: no sweep resumes it
    assert b.upsert_document(second)  # uploading the same bytes again retries it
    _publish(b, second, "second document")
    assert not a.upsert_document(second)  # READY: an upload of the same bytes is a duplicate, nothing reset
    assert a.get_document("acme", second.document_id).status is DocumentStatus.READY
    assert a.claim_document("acme", second.document_id)  # a re-index of a READY document claims it


def test_two_replicas_sweeping_at_once_take_different_documents(open_store) -> None:
    owner = open_store("uploader", lease_s=0.2)
    records = [_record(f"document {n}") for n in range(6)]
    for record in records:
        assert owner.upsert_document(record)
    time.sleep(0.3)
    sweepers = [open_store("sweeper-a"), open_store("sweeper-b")]
    taken: dict[str, list[str]] = {"sweeper-a": [], "sweeper-b": []}
    start = threading.Barrier(2)

    def sweep(store) -> None:
        start.wait()
        while (record := store.claim_unfinished()) is not None:
            taken[store.owner].append(record.document_id)

    threads = [threading.Thread(target=sweep, args=(store,)) for store in sweepers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    claimed = taken["sweeper-a"] + taken["sweeper-b"]
    assert sorted(claimed) == sorted(r.document_id for r in records)  # each once, by one of them


@pytest.mark.store_backends("embedded")  # the embedded store belongs to one process
def test_the_embedded_store_voids_a_dead_process_leases(open_store, store_backend) -> None:
    dead = open_store("dead-process")
    record = _record()
    assert dead.upsert_document(record)
    restarted = open_store("restarted")
    assert restarted.claim_unfinished() is None
    assert restarted.release_all_leases() == 1  # what RagRuntime.open does with an embedded store
    assert restarted.claim_unfinished().document_id == record.document_id


# -- the pipeline ----------------------------------------------------------------------------------------------
TEXT = "\n\n".join(f"Pier {i} of the harbour opens at {i % 12 + 1} o'clock and closes at dusk." for i in range(80))


async def _wait(condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        await asyncio.sleep(0.05)


async def _upload_held_at_embedding(runtime, gate: GatedEmbedder) -> asyncio.Task:
    """Starts an upload on ``runtime`` and returns once it waits at the embedder's gate (mid-ingestion)."""
    upload = asyncio.create_task(collect(runtime.pipeline.upload("acme", "piers.txt", "text/plain", TEXT.encode())))
    await asyncio.to_thread(gate.entered.wait, 10)
    return upload


# A lease that must survive is LIVE_LEASE_S long, renewed every third of it: the test's event loop (which runs
# the heartbeat too) may stall for up to two thirds of it on a loaded machine before a renewal is late. Leases
# that must run out are short and waited out, which a slow machine only lengthens.
LIVE_LEASE_S = 3.0


def _counting(monkeypatch, store, method: str) -> list[bool]:
    """Records each call's result of ``store.<method>`` (a spy: the store still does the work)."""
    calls: list[bool] = []
    real = getattr(store, method)

    def spy(*args):
        result = real(*args)
        calls.append(result)
        return result

    monkeypatch.setattr(store, method, spy)
    return calls


async def test_the_heartbeat_keeps_the_lease_of_a_long_ingestion(open_runtime, open_store, monkeypatch) -> None:
    gate = GatedEmbedder()
    runtime = open_runtime(gate, ingest_lease_s=LIVE_LEASE_S)
    renewals = _counting(monkeypatch, runtime.metadata, "renew_lease")
    task = await _upload_held_at_embedding(runtime, gate)
    other = open_store("starting-replica")
    for renewed in range(1, 5):  # four heartbeats, more than a lease long: renewed all along
        await _wait(lambda n=renewed: len(renewals) >= n)
        assert renewals[-1] and other.claim_unfinished() is None
    (record,) = runtime.metadata.list_documents("acme", 10)
    assert runtime.metadata.lease_holder("acme", record.document_id) == runtime.metadata.owner
    gate.release.set()
    events = await task
    assert events[-1].document.status is DocumentStatus.READY
    assert runtime.metadata.lease_holder("acme", record.document_id) is None


@pytest.mark.store_backends("postgres")  # replicas share a PostgreSQL database
async def test_a_stalled_replica_is_taken_over_and_its_upload_reports_the_takeover(
        open_runtime, store_backend, monkeypatch) -> None:
    gate = GatedEmbedder()
    stalled = open_runtime(gate, ingest_lease_s=0.6)
    # Its heartbeats stop landing (a long pause), though it goes on working once the gate opens.
    monkeypatch.setattr(stalled.metadata, "renew_lease", lambda tenant, document_id: True)
    upload = await _upload_held_at_embedding(stalled, gate)
    (record,) = stalled.metadata.list_documents("acme", 10)
    await asyncio.sleep(0.8)  # the lease runs out
    survivor = open_runtime(ingest_lease_s=0.6)
    assert await survivor.pipeline.resume_unfinished() == 1
    done = survivor.metadata.get_document("acme", record.document_id)
    assert done.status is DocumentStatus.READY
    gate.release.set()
    events = await upload  # the stalled replica's writes are refused; its client gets the survivor's outcome
    assert events[-1].document.status is DocumentStatus.READY
    assert events[-1].document.chunk_count == done.chunk_count
    chunks = survivor.metadata.document_chunks("acme", record.document_id)
    assert len(chunks) == done.chunk_count == len({c.chunk_id for c in chunks})
    assert len(survivor.vectors.stored_ids("acme", record.document_id)) == done.chunk_count


@pytest.mark.store_backends("postgres")  # replicas share a PostgreSQL database
async def test_a_starting_replica_leaves_a_live_ingestion_alone(open_runtime, store_backend, monkeypatch) -> None:
    gate = GatedEmbedder()
    live = open_runtime(gate, ingest_lease_s=LIVE_LEASE_S)
    upload = await _upload_held_at_embedding(live, gate)
    starting = open_runtime(ingest_lease_s=LIVE_LEASE_S)
    sweeps_made = _counting(monkeypatch, starting.metadata, "claim_unfinished")
    renewals = _counting(monkeypatch, live.metadata, "renew_lease")
    sweeps = asyncio.create_task(starting.pipeline.sweep_forever(0.2))
    await _wait(lambda: len(sweeps_made) >= 5 and len(renewals) >= 2)  # sweeps across two of the live heartbeats
    assert not starting.pipeline.busy and not any(sweeps_made)
    gate.release.set()
    events = await upload
    sweeps.cancel()
    await asyncio.gather(sweeps, return_exceptions=True)
    assert events[-1].document.status is DocumentStatus.READY and not events[-1].duplicate
    await _wait(lambda: not starting.pipeline.busy)


@pytest.mark.store_backends("postgres")  # replicas share a PostgreSQL database
async def test_a_document_deleted_through_another_replica_mid_ingestion_says_so(open_runtime, store_backend) -> None:
    gate = GatedEmbedder()
    ingesting = open_runtime(gate, ingest_lease_s=0.6)
    upload = await _upload_held_at_embedding(ingesting, gate)
    (record,) = ingesting.metadata.list_documents("acme", 10)
    other = open_runtime(ingest_lease_s=0.6)
    await other.catalog.delete("acme", record.document_id)
    gate.release.set()
    with pytest.raises(Aborted) as caught:  # not "taken over by another replica": nobody took it
        await upload
    assert caught.value.reason == "DELETED_DURING_INGEST"
    assert record.document_id in caught.value.message
    assert ingesting.metadata.get_document("acme", record.document_id) is None
    assert ingesting.metadata.document_chunks("acme", record.document_id) == []
