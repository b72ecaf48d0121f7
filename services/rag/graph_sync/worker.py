"""The background worker that drains the graph outbox, one document at a time.

NLP over a document is CPU-heavy, so entries are processed strictly one after the other. A
failure (NLP or graph down, a deadline, anything) never drops an entry: it records the error
and falls due again after an exponential, capped backoff with jitter (``runtime.backoff``). Facts extracted before a graph
outage are kept in the entry, so a retry only re-sends them. The worker takes no part in
ingestion: documents are READY before it ever sees them.

Documents being ingested, re-indexed or deleted hold their per-document lock; the worker
looks again later rather than racing them, and every write it makes is guarded by the
entry's sequence, so a newer intent (a re-index, a delete) always wins. The worker also
holds back while ingestion is busy (until no document lock has been held for
``ingestion_quiet_s``): its NLP extraction would slow the embedding of the uploads users are
waiting for. It holds back for at most ``yield_to_ingestion_max_s`` in a row, so a long bulk
upload delays the graph but never starves it. Both periods are read on the locks' clock, so a
test can step it rather than sleep through them.

Backoff grows to minutes during a long outage, so the worker does not wait it out: after a
failure that says a peer is unreachable or too slow (UNAVAILABLE, DEADLINE_EXCEEDED) it checks
the NLP and graph services' health every ``peer_watch_interval_s``, and once both serve again
every entry waiting on backoff falls due at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Protocol

from services.rag.documents import DocumentRecord, DocumentStatus, GraphSyncState, Section
from services.rag.graph_sync.feed import DocumentFacts, GraphFeed
from services.rag.graph_sync.outbox import Operation, Outbox, OutboxEntry
from services.rag.graph_sync.settings import GraphSyncSettings
from services.rag.locks import KeyedLocks
from services.runtime import domain_metrics, tracing
from services.runtime.backoff import Backoff
from services.runtime.errors import DeadlineExceeded, DomainError, Unavailable

log = logging.getLogger("docuthinker.rag.graph")

RECONCILE_EVERY_S = 60.0
"""How often an idle worker looks for PENDING documents without an entry (a failed enqueue)."""


class DocumentSource(Protocol):
    """The metadata store's reads the worker needs (``MetadataStore`` satisfies it)."""

    def get_document(self, tenant: str, document_id: str) -> DocumentRecord | None: ...

    def sections(self, document_id: str) -> list[Section]: ...


def _describe(exc: BaseException) -> str:
    if isinstance(exc, DomainError):
        return f"{exc.code.name}: {exc.message}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class GraphSyncWorker:
    def __init__(
        self,
        outbox: Outbox,
        documents: DocumentSource,
        feed: GraphFeed,
        locks: KeyedLocks,
        settings: GraphSyncSettings,
        backoff: Backoff | None = None,
    ) -> None:
        self._outbox = outbox
        self._documents = documents
        self._feed = feed
        self._locks = locks
        self._poll_s = settings.poll_interval_s
        self._retry = backoff or Backoff(settings.backoff_initial_s, settings.backoff_max_s)
        self._quiet_s = settings.ingestion_quiet_s
        self._yield_max_s = settings.yield_to_ingestion_max_s
        self._yielding_since: float | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._reconciled_at = 0.0
        self._watch_s = settings.peer_watch_interval_s
        self._peer_outage = False
        self._watched_at = 0.0
        self._held_back = 0

    @property
    def held_back(self) -> int:
        """How many times the worker has looked and held back for ingestion (tests wait on it)."""
        return self._held_back

    def notify(self) -> None:
        """New work was queued: look at the outbox now rather than at the next poll (or, while holding
        back for ingestion, at the clock again)."""
        self._wake.set()

    async def start(self) -> None:
        queued = await self._reconcile()
        pending = len(await asyncio.to_thread(self._outbox.entries))
        log.info("graph sync worker started", extra={"fields": {"pending": pending, "requeued": queued}})
        self._task = asyncio.get_running_loop().create_task(self._run(), name="graph-sync-worker")

    async def stop(self) -> None:
        """Cancels the entry in progress, if any: it stays in the outbox for the next start."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._feed.close()

    async def _run(self) -> None:
        while True:
            self._wake.clear()  # before looking: an enqueue after the look sets it again
            try:
                if self._yield_to_ingestion():
                    self._held_back += 1
                    await self._wait(max(self._quiet_s - self._locks.quiet_for(), 0.0) + 0.01)
                    continue
                if await self.run_once():
                    continue
                await self._sleep_until_due()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("graph sync worker loop failed; retrying")
                await asyncio.sleep(self._poll_s)

    async def _wait(self, timeout_s: float) -> None:
        """Sleeps up to ``timeout_s``; ``notify`` ends it early."""
        try:
            await asyncio.wait_for(self._wake.wait(), timeout=timeout_s)
        except TimeoutError:
            pass

    async def _reconcile(self) -> int:
        self._reconciled_at = time.monotonic()
        queued = await asyncio.to_thread(self._outbox.reconcile)
        if queued:
            log.warning("queued documents the outbox had missed", extra={"fields": {"documents": queued}})
        return queued

    async def _sleep_until_due(self) -> None:
        if time.monotonic() - self._reconciled_at >= RECONCILE_EVERY_S:
            await self._reconcile()
        due = await asyncio.to_thread(self._outbox.next_attempt_time)
        delay = self._poll_s if due is None else min(self._poll_s, max(0.0, due - time.time()))
        watching = self._peer_outage and due is not None and due - time.time() > self._watch_s
        if watching:
            delay = min(delay, max(0.0, self._watched_at + self._watch_s - time.monotonic()))
        await self._wait(delay)
        if watching and time.monotonic() - self._watched_at >= self._watch_s:
            self._watched_at = time.monotonic()
            if not await self._feed.peers_serving():
                return
            self._peer_outage = False
            resumed = await asyncio.to_thread(self._outbox.retry_now)
            log.info("graph sync peers serve again; retrying now", extra={"fields": {"entries": resumed}})

    async def run_once(self) -> bool:
        """Processes the earliest due entry; False when none is due."""
        entry = await asyncio.to_thread(self._outbox.next_due)
        if entry is None:
            return False
        try:
            with tracing.background(f"graph_sync.{entry.operation.value}", entry.trace_context,
                                    **{"docuthinker.attempt": entry.attempts + 1}):
                if entry.operation is Operation.DELETE:
                    await self._delete(entry)
                else:
                    await self._upsert(entry)
            domain_metrics.GRAPH_SYNC.labels(entry.operation.value, "done").inc()
            self._peer_outage = False
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            domain_metrics.GRAPH_SYNC.labels(entry.operation.value, "retry").inc()
            delay = self._retry.delay_s(entry.attempts + 1)
            self._peer_outage = isinstance(exc, Unavailable | DeadlineExceeded)
            await asyncio.to_thread(self._outbox.retry_later, entry, _describe(exc), delay)
            log.warning("graph sync failed; will retry", exc_info=not isinstance(exc, DomainError), extra={"fields": {
                "document_id": entry.document_id, "tenant": entry.tenant, "operation": entry.operation.value,
                "attempts": entry.attempts + 1, "retry_in_s": round(delay, 3), "error": _describe(exc)[:300]}})
        return True

    async def _upsert(self, entry: OutboxEntry) -> None:
        if self._locks.busy(entry.document_id):  # being ingested, re-indexed or deleted right now
            await asyncio.to_thread(self._outbox.defer, entry, self._poll_s)
            return
        record = await asyncio.to_thread(self._documents.get_document, entry.tenant, entry.document_id)
        if record is None:  # removed without a delete intent (bad input): nothing reached the graph
            await asyncio.to_thread(self._outbox.complete, entry, False)
            return
        if record.status is DocumentStatus.FAILED:  # its chunks are gone: so are its facts
            await self._feed.remove(entry.tenant, entry.document_id)
            await asyncio.to_thread(self._outbox.complete, entry, False)
            return
        if record.status is not DocumentStatus.READY:  # interrupted mid-ingestion; resumed at startup
            await asyncio.to_thread(self._outbox.defer, entry, self._poll_s)
            return
        started = time.perf_counter()
        cached = entry.facts is not None
        if entry.facts is not None:
            facts = DocumentFacts.from_json(entry.facts)
        else:
            sections = await asyncio.to_thread(self._documents.sections, record.document_id)
            facts = await self._feed.extract(record.tenant, sections)
            await asyncio.to_thread(self._outbox.save_facts, entry, facts.to_json())
        extracted = time.perf_counter()
        await self._feed.publish(record, facts)
        published = time.perf_counter()
        current = await asyncio.to_thread(self._outbox.complete, entry, True)
        domain_metrics.GRAPH_SYNC_LAG.observe(max(0.0, time.time() - entry.enqueue_time))
        log.info("document synced to the knowledge graph", extra={"fields": {
            "document_id": record.document_id, "tenant": record.tenant, "topics": len(facts.topics),
            "entities": len(facts.entities), "facts_cached": cached, "superseded": not current,
            "nlp_ms": round((extracted - started) * 1000, 2), "upsert_ms": round((published - extracted) * 1000, 2)}})

    def _yield_to_ingestion(self) -> bool:
        """True while ingestion is busy or only just done, unless the worker has held back too long."""
        if self._yield_max_s <= 0 or self._locks.quiet_for() >= self._quiet_s:
            self._yielding_since = None
            return False
        now = self._locks.clock()
        if self._yielding_since is None:
            self._yielding_since = now
        if now - self._yielding_since >= self._yield_max_s:
            self._yielding_since = None  # this entry goes through; the next one holds back again
            return False
        return True

    async def _delete(self, entry: OutboxEntry) -> None:
        if self._locks.busy(entry.document_id):  # the delete that queued this is still removing it
            await asyncio.to_thread(self._outbox.defer, entry, self._poll_s)
            return
        async with self._locks.hold(entry.document_id):
            record = await asyncio.to_thread(self._documents.get_document, entry.tenant, entry.document_id)
        if record is not None:
            # The delete was interrupted (a crash) before it removed the document: the document
            # survived, so the graph must keep its facts; re-sync them rather than remove them.
            if record.graph_sync is GraphSyncState.DISABLED:
                await asyncio.to_thread(self._outbox.complete, entry, False)
            else:
                await asyncio.to_thread(self._outbox.replace_operation, entry, Operation.UPSERT)
            return
        await self._feed.remove(entry.tenant, entry.document_id)
        await asyncio.to_thread(self._outbox.complete, entry, False)
        log.info("document removed from the knowledge graph", extra={"fields": {
            "document_id": entry.document_id, "tenant": entry.tenant}})

