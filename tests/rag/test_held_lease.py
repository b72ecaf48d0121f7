"""``HeldLease``: what it tells the store when the block ends (a fake store at the port's boundary)."""

from __future__ import annotations

import pytest

from services.rag.ingest.takeover import HeldLease


class CountingLeases:
    def __init__(self) -> None:
        self.renewed = 0
        self.released: list[tuple[str, str]] = []

    def renew_lease(self, tenant: str, document_id: str) -> bool:
        self.renewed += 1
        return True

    def release_lease(self, tenant: str, document_id: str) -> None:
        self.released.append((tenant, document_id))


async def test_a_block_that_ends_unsettled_lets_the_lease_go() -> None:
    store = CountingLeases()
    with pytest.raises(RuntimeError):
        async with HeldLease(store, "acme", "doc-1", heartbeat_s=60):
            raise RuntimeError("shutdown mid-ingestion")
    assert store.released == [("acme", "doc-1")]


async def test_a_settled_lease_is_not_released_again() -> None:
    """The publication ended the lease in the same transaction that made the document READY."""
    store = CountingLeases()
    async with HeldLease(store, "acme", "doc-1", heartbeat_s=60) as lease:
        lease.settle()
    assert store.released == []
