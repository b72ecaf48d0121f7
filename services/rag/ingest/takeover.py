"""Holding a document's ingestion lease while the work runs (the rules: ``services.rag.store.leases``).

``HeldLease`` renews the lease by heartbeat, every third of its length, so a live replica never lets it
run out however long parsing, OCR or embedding take; a replica that dies stops renewing, and once the
lease has run out another replica's sweep (``IngestionPipeline.sweep_forever``) takes the document over.
A renewal that finds the lease gone (this replica stalled past it and was taken over) stops the
heartbeat and marks the lease lost; the ingestion checks that between embedding groups, and its next
status write or its publication is refused anyway, so it never competes with the new holder.
"""

from __future__ import annotations

import asyncio
import logging
from types import TracebackType
from typing import Protocol

from services.rag.store.leases import LeaseLost

log = logging.getLogger("docuthinker.rag.ingest")


class LeaseStore(Protocol):
    """The metadata store's lease calls that a held lease uses (both backends have them)."""

    def renew_lease(self, tenant: str, document_id: str) -> bool: ...
    def release_lease(self, tenant: str, document_id: str) -> None: ...


class HeldLease:
    """An async context: renews this replica's lease on one document every ``heartbeat_s`` while the block
    runs, and lets it go when the block ends (a no-op once the document is READY or FAILED, which end the
    lease themselves), so a shutdown mid-ingestion leaves the document to the next sweep at once."""

    def __init__(self, store: LeaseStore, tenant: str, document_id: str, heartbeat_s: float) -> None:
        self._store = store
        self._tenant, self._document_id = tenant, document_id
        self._heartbeat_s = heartbeat_s
        self._beat: asyncio.Task | None = None
        self._settled = False
        self.lost = False
        """A renewal found the lease held by another replica (or gone): this replica's work is void."""

    def settle(self) -> None:
        """The document is READY (its publication ended the lease): stop renewing it, and nothing to let go."""
        self._settled = True
        if self._beat is not None:
            self._beat.cancel()

    def check(self) -> None:
        """Raises ``LeaseLost`` once the lease is known to be lost (called between units of work)."""
        if self.lost:
            raise LeaseLost(self._document_id)

    async def __aenter__(self) -> HeldLease:
        self._beat = asyncio.get_running_loop().create_task(self._heartbeat())
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._beat is not None:
            self._beat.cancel()
            await asyncio.gather(self._beat, return_exceptions=True)
        if self._settled:
            return
        try:
            await asyncio.shield(asyncio.to_thread(self._store.release_lease, self._tenant, self._document_id))
        except Exception as error:  # noqa: BLE001 - the lease then runs out by itself
            log.warning("lease release failed", extra={"fields": {"document_id": self._document_id,
                                                                  "error": str(error) or type(error).__name__}})

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self._heartbeat_s)
            try:
                held = await asyncio.to_thread(self._store.renew_lease, self._tenant, self._document_id)
            except Exception as error:  # noqa: BLE001 - a database blip: the lease has two more beats of slack
                log.warning("lease renewal failed", extra={"fields": {
                    "document_id": self._document_id, "error": str(error) or type(error).__name__}})
                continue
            if not held:
                self.lost = True
                log.warning("ingestion lease lost", extra={"fields": {"document_id": self._document_id}})
                return
