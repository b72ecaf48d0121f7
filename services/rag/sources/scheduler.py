"""The sync scheduler every rag replica runs: claims due sources under a lease and syncs them; watches folders.

Every ``tick_s`` (and at once when a sync is asked for through this replica, or a watched folder changed) it
claims due sources, as many as ``max_concurrent`` allows. Each claim is a lease on the source row, renewed by
heartbeat while the sync runs (``HeldLease``, the mechanism of ingestion leases): another replica's claim skips a
source whose lease is live, so one source is never synced twice at once, and a replica that dies mid-sync leaves
its sources to the others when their leases run out. Folder sources are also watched (``watchfiles``: inotify on
Linux) in every replica that can see the folder; an event asks for a sync, which one replica then claims.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pathlib
import time

import watchfiles

from services.rag.ingest.takeover import HeldLease
from services.rag.sources.connect import Connectors
from services.rag.sources.connectors.folder import allowed_folder
from services.rag.sources.engine import SyncEngine
from services.rag.sources.model import RUN_ERRORS, SourceRecord, SourceState
from services.rag.sources.settings import SourcesSettings

log = logging.getLogger("docuthinker.rag.sources")
WATCH_REFRESH_TICKS = 5
"""Ticks between two looks at which folders to watch (and at once when woken: a new source is watched at once)."""
WATCH_IDLE_MS = 2000
"""A watch reports in after this long without events: its first report says it is live."""


class SourceScheduler:
    def __init__(self, store, engine: SyncEngine, connectors: Connectors, settings: SourcesSettings) -> None:
        self._store = store
        self._engine = engine
        self._connectors = connectors
        self._settings = settings
        self._wake = asyncio.Event()
        self._running: set[asyncio.Task] = set()
        self._watchers: dict[tuple[str, str, str], asyncio.Task] = {}
        self._stop = asyncio.Event()

    def wake(self) -> None:
        """Look for due sources now (a sync was asked for, a folder changed, a slot freed)."""
        self._wake.set()

    @property
    def running(self) -> int:
        return len(self._running)

    async def run_forever(self) -> None:
        tick = 0
        woken = False
        while True:
            try:
                await self._start_due()
                if tick % WATCH_REFRESH_TICKS == 0 or woken:
                    await self._refresh_watchers()
            except Exception:
                log.exception("source scheduling failed")
            tick += 1
            woken = False
            with contextlib.suppress(TimeoutError):
                woken = await asyncio.wait_for(self._wake.wait(), self._settings.tick_s)
            self._wake.clear()

    async def _start_due(self) -> None:
        while len(self._running) < self._settings.max_concurrent:
            source = await asyncio.to_thread(self._store.claim_due)
            if source is None:
                return
            task = asyncio.get_running_loop().create_task(self._sync(source), name=f"source-sync-{source.source_id}")
            self._running.add(task)
            task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self._running.discard(task)
        self.wake()

    async def _sync(self, source: SourceRecord) -> None:
        heartbeat = self._settings.lease_s / 3
        try:
            async with HeldLease(self._store, source.tenant, source.source_id, heartbeat) as lease:
                try:
                    connector = self._connectors.open(source)
                except RUN_ERRORS as error:
                    if await asyncio.to_thread(self._store.finish, source.tenant, source.source_id,
                                               state=SourceState.FAILED, error_reason=error.reason,
                                               error_message=error.message,
                                               next_run=time.time() + self._settings.run_backoff_max_s):
                        lease.settle()
                    return
                await self._engine.sync(source, connector, lease)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("source sync crashed", extra={"fields": {"source_id": source.source_id}})

    # -- folder watches ------------------------------------------------------------------------
    async def _refresh_watchers(self) -> None:
        wanted: dict[tuple[str, str, str], pathlib.Path] = {}
        for source in await asyncio.to_thread(self._store.watched_folders):
            config = source.typed_config()
            if config.poll_only:
                continue
            try:
                path = allowed_folder(config.path, self._connectors.roots)
            except RUN_ERRORS:
                continue
            if path.is_dir():
                wanted[(source.tenant, source.source_id, str(path))] = path
        for key in set(self._watchers) - set(wanted):
            self._watchers.pop(key).cancel()
        for key, path in wanted.items():
            if key not in self._watchers or self._watchers[key].done():
                self._watchers[key] = asyncio.get_running_loop().create_task(self._watch(key[0], key[1], path))

    async def _watch(self, tenant: str, source_id: str, path: pathlib.Path) -> None:
        # What changed between the last sync and the moment the watch is live raises no event: one catch-up sync
        # once the watch first reports in (cheap: unchanged files are skipped by their change token).
        caught_up = False
        try:
            async for changes in watchfiles.awatch(path, debounce=self._settings.watch_debounce_ms, recursive=True,
                                                   stop_event=self._stop, rust_timeout=WATCH_IDLE_MS,
                                                   yield_on_timeout=True):
                if changes or not caught_up:
                    caught_up = True
                    if await asyncio.to_thread(self._store.request_sync, tenant, source_id):
                        self.wake()
        except (OSError, RuntimeError) as error:  # the folder went away: the next refresh watches it again
            log.info("folder watch ended", extra={"fields": {"source_id": source_id, "error": str(error)}})

    async def close(self) -> None:
        self._stop.set()
        tasks = [*self._running, *self._watchers.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._watchers.clear()
