"""One sync of one source: list, compare change tokens, fetch and upload what is new or changed, delete what
disappeared, record each item's outcome as soon as it is known, and the run's.

Items are handled one after the other (ingestion is the cost, and it is shared with the tenant's own uploads).
Each item's documents are uploaded under a stable name, ``source:<source id>:<item key>`` (``#<part>`` for an
attachment), so a changed item becomes a new version of the same document, and an upload repeated after a
crash (the item's row not yet written) is a duplicate of the live version: nothing twice. An item that fails
(unreadable, refused by ingestion) is recorded with its reason and tried again after a backoff that doubles per
failure (capped, with jitter: ``runtime.backoff``); the others go on. An error of the source itself (unreachable,
refused credential, missing folder) stops the run: what was done stays done, nothing is deleted, and the run is
retried with backoff.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from services.rag.catalog import DocumentCatalog
from services.rag.documents import IngestOutcome
from services.rag.ingest.pipeline import IngestionPipeline
from services.rag.sources.connectors.base import Connector, Item, Part
from services.rag.sources.model import RUN_ERRORS, SourceItem, SourceRecord, SourceState, SyncCounts
from services.rag.sources.settings import SourcesSettings
from services.rag.store.leases import LeaseLost
from services.runtime import domain_metrics
from services.runtime.backoff import Backoff
from services.runtime.errors import DomainError, NotFound

log = logging.getLogger("docuthinker.rag.sources")

ADDED, CHANGED, UNCHANGED = "added", "changed", "unchanged"


def document_key(source_id: str, item_key: str, suffix: str = "") -> str:
    """The stable name of an item's document (a part's, with its suffix)."""
    return f"source:{source_id}:{item_key}" + (f"#{suffix}" if suffix else "")


class Lease(Protocol):
    """What the engine needs of the source's held lease (``HeldLease``): ``check`` raises ``LeaseLost`` once it is
    gone; ``settle`` says the sync's end released it, so nothing releases it again (the same replica may hold a
    new claim on the source by then: claims are the replica's, not the sync's)."""

    def check(self) -> None: ...

    def settle(self) -> None: ...


@dataclass
class _Run:
    seen: int = 0
    added: int = 0
    changed: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: int = 0

    def counts(self) -> SyncCounts:
        return SyncCounts(self.seen, self.added, self.changed, self.unchanged, self.deleted, self.failed)


class SyncEngine:
    def __init__(self, store: Any, pipeline: IngestionPipeline, catalog: DocumentCatalog, settings: SourcesSettings,
                 clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._pipeline = pipeline
        self._catalog = catalog
        self._settings = settings
        self._clock = clock
        self._item_backoff = Backoff(settings.item_backoff_initial_s, settings.item_backoff_max_s)
        self._run_backoff = Backoff(settings.run_backoff_initial_s, settings.run_backoff_max_s)

    async def sync(self, source: SourceRecord, connector: Connector, lease: Lease) -> None:
        """Runs one sync of a source this replica has claimed, and records how it went."""
        started = self._clock()
        run = _Run()
        kind = source.kind.value
        try:
            state, reason, message, cursor = await self._run(source, connector, lease, run)
        except LeaseLost:
            log.warning("source taken over mid-sync", extra={"fields": {"source_id": source.source_id}})
            return
        except asyncio.CancelledError:
            await asyncio.shield(asyncio.to_thread(
                self._store.finish, source.tenant, source.source_id, state=SourceState.FAILED,
                last_run_end=self._clock(), counts=run.counts(), error_reason="SYNC_INTERRUPTED",
                error_message="the sync was interrupted by a shutdown; it resumes at the next start",
                next_run=self._clock()))
            raise
        finally:
            await asyncio.to_thread(connector.close)
        now = self._clock()
        failures = source.consecutive_failures + 1 if state is SourceState.FAILED else 0
        interval = source.interval_s or self._settings.default_interval_s
        next_run = now + interval
        if state is SourceState.FAILED:
            next_run = now + min(self._run_backoff.delay_s(failures), interval)
        retry = await asyncio.to_thread(self._earliest_retry, source)
        if retry is not None:
            next_run = min(next_run, max(retry, now + 1))
        finished = await asyncio.to_thread(
            self._store.finish, source.tenant, source.source_id, state=state, last_run_end=now,
            counts=run.counts(), error_reason=reason, error_message=message, consecutive_failures=failures,
            next_run=next_run, **({"cursor": cursor, "last_success": now} if state is not SourceState.FAILED else {}))
        if finished:
            lease.settle()
        domain_metrics.SOURCE_SYNCS.labels(kind, state.name.lower()).inc()
        domain_metrics.SOURCE_SYNC_SECONDS.labels(kind).observe(now - started)
        log.info("source synced", extra={"fields": {
            "source_id": source.source_id, "tenant": source.tenant, "kind": kind, "state": state.name,
            "reason": reason, **run.counts().__dict__, "seconds": round(now - started, 3)}})

    def _earliest_retry(self, source: SourceRecord) -> float | None:
        due = [i.next_attempt for i in self._store.items(source.tenant, source.source_id).values()
               if i.failed and i.next_attempt is not None]
        return min(due) if due else None

    async def _run(self, source: SourceRecord, connector: Connector, lease: Lease,
                   run: _Run) -> tuple[SourceState, str, str, dict]:
        try:
            listing = await asyncio.to_thread(connector.scan, dict(source.cursor))
        except RUN_ERRORS as error:
            return SourceState.FAILED, error.reason, error.message, source.cursor
        known = await asyncio.to_thread(self._store.items, source.tenant, source.source_id)
        now = self._clock()
        listed = {item.key for item in listing.items}
        run.seen = len(listing.items)
        pending_failures = 0
        for item in listing.items:
            lease.check()
            before = known.get(item.key)
            if before is not None and before.token == item.token:
                if not before.failed:
                    run.unchanged += 1
                    continue
                if before.next_attempt is not None and before.next_attempt > now:
                    pending_failures += 1  # still backing off
                    continue
            try:
                outcome = await self._item(source, connector, item, before)
            except RUN_ERRORS as error:
                return SourceState.FAILED, error.reason, f"{error.message} (after {item.key!r})", source.cursor
            if outcome == "failed":
                run.failed += 1
            else:
                setattr(run, outcome, getattr(run, outcome) + 1)
            domain_metrics.SOURCE_ITEMS.labels(source.kind.value, outcome).inc()
            if not await asyncio.to_thread(self._store.progress, source.tenant, source.source_id, run.counts()):
                raise LeaseLost(source.source_id)  # the source was deleted (or taken over) meanwhile: stop here
        for key, gone in known.items():
            if key in listed:
                continue
            lease.check()
            await self._forget(source, gone)
            run.deleted += 1
            domain_metrics.SOURCE_ITEMS.labels(source.kind.value, "deleted").inc()
        state = SourceState.PARTIAL if run.failed or pending_failures else SourceState.OK
        message = f"{run.failed + pending_failures} item(s) failing; see the item errors" if state is \
            SourceState.PARTIAL else ""
        return state, "ITEMS_FAILED" if message else "", message, {**source.cursor, **listing.cursor}

    async def _item(self, source: SourceRecord, connector: Connector, item: Item, before: SourceItem | None) -> str:
        """Fetches and uploads one item; records it; returns added, changed, unchanged or failed."""
        documents = list(before.document_ids) if before else []
        try:
            parts = await asyncio.to_thread(connector.fetch, item)
            digest = _digest(parts)
            if before is not None and not before.failed and before.content_sha256 == digest:
                await asyncio.to_thread(self._store.put_item, replace(before, token=item.token,
                                                                      update_time=self._clock()))
                return UNCHANGED
            kinds: list[str] = []
            uploaded: list[str] = []
            for part in parts:
                outcome = await self._upload(source, item, part)
                uploaded.append(outcome.document.document_id)
                kinds.append(UNCHANGED if outcome.duplicate else ADDED if outcome.document.version == 1 else CHANGED)
        except RUN_ERRORS:
            raise
        except (DomainError, OSError, LookupError, RuntimeError, ValueError) as error:
            return await self._failed(source, item, before, documents, error)
        for stale in set(documents) - set(uploaded):  # a part the item no longer has (an attachment removed)
            await self._delete_document(source.tenant, stale)
        record = SourceItem(source.tenant, source.source_id, item.key, item.token, digest, tuple(uploaded),
                            update_time=self._clock())
        await asyncio.to_thread(self._store.put_item, record)
        if before is None or not before.document_ids:
            return ADDED
        return CHANGED if CHANGED in kinds or ADDED in kinds or set(uploaded) != set(documents) else UNCHANGED

    async def _upload(self, source: SourceRecord, item: Item, part: Part) -> IngestOutcome:
        key = document_key(source.source_id, item.key, part.suffix)
        events = self._pipeline.upload(source.tenant, part.filename, part.content_type, part.data, key=key)
        outcome = None
        async for event in events:
            if isinstance(event, IngestOutcome):
                outcome = event
        if outcome is None:
            raise RuntimeError("ingestion ended without an outcome")
        return outcome

    async def _failed(self, source: SourceRecord, item: Item, before: SourceItem | None, documents: list[str],
                      error: Exception) -> str:
        attempts = (before.attempts if before and before.failed else 0) + 1
        reason = error.reason if isinstance(error, DomainError) else type(error).__name__.upper()
        message = error.message if isinstance(error, DomainError) else str(error) or type(error).__name__
        wait = self._item_backoff.delay_s(attempts)
        record = SourceItem(source.tenant, source.source_id, item.key, item.token, "", tuple(documents), failed=True,
                            attempts=attempts, next_attempt=self._clock() + wait, error_reason=reason,
                            error_message=message[:1000], update_time=self._clock())
        await asyncio.to_thread(self._store.put_item, record)
        log.warning("source item failed", extra={"fields": {
            "source_id": source.source_id, "item": item.key, "reason": reason, "attempts": attempts,
            "retry_in_s": round(wait, 1)}})
        return "failed"

    async def _forget(self, source: SourceRecord, item: SourceItem) -> None:
        for document_id in item.document_ids:
            await self._delete_document(source.tenant, document_id)
        await asyncio.to_thread(self._store.delete_item, source.tenant, source.source_id, item.key)

    async def _delete_document(self, tenant: str, document_id: str) -> None:
        try:
            await self._catalog.delete(tenant, document_id)
        except NotFound:
            pass  # deleted by hand meanwhile


def _digest(parts: list[Part]) -> str:
    """The content of an item's documents, as one hash (equal bytes: nothing to upload)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(f"{part.suffix}\x1f{hashlib.sha256(part.data).hexdigest()}\x1e".encode())
    return digest.hexdigest()
