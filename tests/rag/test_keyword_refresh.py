"""Debounced BM25 refreshes: one rebuild per burst, deferred while ingestion is busy."""

from __future__ import annotations

import asyncio

from services.rag.keyword_refresh import KeywordRefresher


class CountingIndex:
    def __init__(self) -> None:
        self.refreshed: list[str] = []

    def refresh(self, tenant: str) -> bool:
        self.refreshed.append(tenant)
        return True


async def test_a_burst_of_changes_costs_one_rebuild_per_tenant() -> None:
    index = CountingIndex()
    refresher = KeywordRefresher(index, delay_s=0.05)
    for _ in range(5):
        refresher.notify("acme")
    refresher.notify("globex")
    await refresher.drain()
    assert sorted(index.refreshed) == ["acme", "globex"]


async def test_rebuild_waits_while_ingestion_is_busy() -> None:
    index = CountingIndex()
    busy, asked = {"now": True}, []
    refresher = KeywordRefresher(index, delay_s=0.02, busy=lambda: asked.append(1) or busy["now"], max_wait_s=60)
    refresher.notify("acme")
    while len(asked) < 3:  # it has looked, and held back, a few times (counted, not timed)
        await asyncio.sleep(0.01)
    assert index.refreshed == []
    busy["now"] = False
    await refresher.drain()
    assert index.refreshed == ["acme"]


async def test_busy_forever_still_rebuilds_after_the_max_wait() -> None:
    index = CountingIndex()
    refresher = KeywordRefresher(index, delay_s=0.02, busy=lambda: True, max_wait_s=0.2)
    refresher.notify("acme")
    await asyncio.wait_for(refresher.drain(), timeout=5)
    assert index.refreshed == ["acme"]


async def test_close_cancels_pending_rebuilds() -> None:
    index = CountingIndex()
    refresher = KeywordRefresher(index, delay_s=5)
    refresher.notify("acme")
    await refresher.close()
    assert index.refreshed == []
