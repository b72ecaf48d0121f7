"""The scheduler's leases on both backends (two replicas never sync one source at once; a dead replica's source
is taken over when its lease runs out) and folder watching (a file event starts a sync by itself)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time

import pytest

from services.rag.sources.connect import Connectors
from services.rag.sources.model import SourceKind, SourceRecord, SourceState
from services.rag.sources.scheduler import SourceScheduler
from services.rag.sources.secrets import CredentialBox
from services.rag.sources.settings import SourcesSettings

from .conftest import TENANT


def _record(source_id: str, **fields) -> SourceRecord:
    now = time.time()
    return SourceRecord(tenant=TENANT, source_id=source_id, name=source_id, kind=SourceKind.FOLDER,
                        config={"path": "/nowhere"}, create_time=now, update_time=now, next_run=now - 1,
                        interval_s=60, **fields)


def _stores(store_backend: str, tmp_path, request, lease_s: float):
    """Two replicas' views of one source store (on SQLite: one process, one store, so one owner claims)."""
    if store_backend == "embedded":
        from services.rag.sources.store import SqliteSourceStore

        store = SqliteSourceStore(tmp_path / "sources.sqlite3", owner="replica-a", lease_s=lease_s)
        return store, None
    from services.rag.sources.pg_store import PostgresSourceStore
    from services.storage.postgres import shared

    db = shared(request.getfixturevalue("postgres_dsn"))
    return (PostgresSourceStore(db, owner="replica-a", lease_s=lease_s),
            PostgresSourceStore(db, owner="replica-b", lease_s=lease_s))


@pytest.mark.parametrize("store_backend", ["embedded", "postgres"])
def test_a_claimed_source_is_nobody_elses_until_its_lease_runs_out(store_backend, tmp_path, request) -> None:
    a, b = _stores(store_backend, tmp_path, request, lease_s=0.5)
    a.create(_record("s1"))
    claimed = a.claim_due()
    assert claimed is not None and claimed.state is SourceState.RUNNING
    assert a.claim_due() is None  # not twice, not even by its holder
    if b is not None:
        assert b.claim_due() is None
    assert a.renew_lease(TENANT, "s1")
    time.sleep(0.7)  # the holder stopped renewing (it died)
    taker = b or a
    if b is None:  # the embedded store has one owner: another process would void the lease at open
        a.release_lease(TENANT, "s1")
    again = taker.claim_due()
    assert again is not None and again.source_id == "s1"
    if b is not None:
        assert not a.finish(TENANT, "s1", state=SourceState.OK)  # the late holder's outcome is refused
        assert not a.renew_lease(TENANT, "s1")
        assert b.finish(TENANT, "s1", state=SourceState.OK, next_run=time.time() + 60)
    # A paused source is not due on schedule, but a sync asked for still runs.
    a.create(_record("s2", paused=True))
    assert taker.claim_due() is None or taker.claim_due() is None
    assert a.request_sync(TENANT, "s2")
    assert taker.claim_due().source_id == "s2"


class _SlowEngine:
    """Counts syncs of each source running at once over every replica (``shared``): the scheduler's leases are
    under test, not the sync."""

    def __init__(self, store, shared: dict) -> None:
        self.store = store
        self.shared = shared
        self.runs = 0

    async def sync(self, source, connector, lease) -> None:
        """As ``SyncEngine.sync`` ends: the outcome written, which ends the claim, then the lease settled."""
        running = self.shared.setdefault("running", {})
        running[source.source_id] = running.get(source.source_id, 0) + 1
        self.shared["most"] = max(self.shared.get("most", 0), running[source.source_id])
        self.runs += 1
        try:
            await asyncio.sleep(0.3)
        finally:
            running[source.source_id] -= 1
        if await asyncio.to_thread(self.store.finish, source.tenant, source.source_id, state=SourceState.OK,
                                   next_run=time.time()):  # due again at once: every tick of both replicas wants it
            lease.settle()


async def test_two_replicas_never_sync_one_source_at_once(tmp_path, postgres_dsn) -> None:
    from services.rag.sources.pg_store import PostgresSourceStore
    from services.storage.postgres import shared

    db = shared(postgres_dsn)
    settings = SourcesSettings(tick_s=0.05, max_concurrent=4, lease_s=5, folder_roots=[tmp_path])
    connectors = Connectors(settings, CredentialBox(os.urandom(32)), [tmp_path], tmp_path / "cache")
    stores = [PostgresSourceStore(db, owner=f"replica-{i}", lease_s=5) for i in range(2)]
    stores[0].create(_record("one"))
    stores[0].create(_record("two"))
    seen: dict = {}
    engines = [_SlowEngine(store, seen) for store in stores]
    schedulers = [SourceScheduler(store, engine, connectors, settings) for store, engine in zip(stores, engines)]
    tasks = [asyncio.ensure_future(s.run_forever()) for s in schedulers]
    await asyncio.sleep(3.0)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for scheduler in schedulers:
        await scheduler.close()
    assert all(e.runs > 0 for e in engines)  # both replicas synced
    assert sum(e.runs for e in engines) >= 6  # the two sources, many times over
    assert seen["most"] == 1  # never two syncs of one source at once, across the replicas


async def test_a_file_event_starts_a_sync(stack) -> None:
    folder = stack.roots / "watched"
    folder.mkdir()
    (folder / "first.md").write_text("# First\n\nThe first note of the watched folder.\n")
    source_id = await stack.create("watched", SourceKind.FOLDER, {"path": str(folder)}, interval_s=3600)
    async with _scheduling(stack):
        await _until(lambda: len(stack.documents()) == 1, 20)  # created: synced at once
        # The watch is live once it has asked for its catch-up sync, which finds nothing new: wait for that run.
        await _until(lambda: _settled(record := stack.store.get(TENANT, source_id))
                     and (record.counts.added, record.counts.unchanged) == (0, 1), 30)
        next_run = stack.store.get(TENANT, source_id).next_run
        assert next_run > time.time() + 3000  # nothing scheduled soon: only a file event can start a sync
        (folder / "second.md").write_text("# Second\n\nA note written after the first sync.\n")
        await _until(lambda: len(stack.documents()) == 2, 20)

        def recorded() -> bool:  # the sync's outcome lands just after the document does
            record = stack.store.get(TENANT, source_id)
            return record.state is SourceState.OK and (record.counts.added, record.counts.unchanged) == (1, 1)

        await _until(recorded, 20)


async def test_a_change_made_while_nothing_watched_is_caught_up_when_the_watch_is_live(stack) -> None:
    folder = stack.roots / "caught-up"
    folder.mkdir()
    (folder / "first.md").write_text("# First\n\nThe first note of the folder.\n")
    source_id = await stack.create("caught up", SourceKind.FOLDER, {"path": str(folder)}, interval_s=3600)
    async with _scheduling(stack):
        await _until(lambda: len(stack.documents()) == 1, 20)
        await _until(lambda: stack.store.get(TENANT, source_id).state is SourceState.OK, 20)
    assert stack.store.get(TENANT, source_id).next_run > time.time() + 3000
    # Written while no replica watches: no event will ever tell of it, and the next sync is an hour away.
    (folder / "second.md").write_text("# Second\n\nA note written while nothing watched.\n")
    async with _scheduling(stack):  # another replica's scheduler, started afterwards
        await _until(lambda: len(stack.documents()) == 2, 20)


def _settled(record: SourceRecord) -> bool:
    """No sync running or asked for, the last one ended."""
    return record.state is SourceState.OK and not record.requested and (record.last_run_end or 0) >= (
        record.last_run_start or 0) > 0


@contextlib.asynccontextmanager
async def _scheduling(stack):
    """A scheduler running over the stack (folders watched after 0.2 s ticks, 200 ms debounce) for the block."""
    settings = SourcesSettings(tick_s=0.2, folder_roots=[stack.roots], watch_debounce_ms=200)
    scheduler = SourceScheduler(stack.store, stack.engine, stack.connectors, settings)
    task = asyncio.ensure_future(scheduler.run_forever())
    try:
        yield scheduler
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await scheduler.close()


async def _until(condition, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.1)
