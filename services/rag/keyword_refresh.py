"""Background, debounced rebuilds of a tenant's BM25 index after its chunks change.

A burst of uploads costs one rebuild, not one per document: the rebuild waits for a quiet
period and, up to ``max_wait_s``, for ingestion to go idle (a rebuild competes with the
embedding model for the same cores). Searches never depend on this: ``KeywordIndex.search``
rebuilds a stale index itself, so this only spares the first search after a change the wait.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from services.rag.store.ports import KeywordPort

log = logging.getLogger("docuthinker.rag.keyword")


class KeywordRefresher:
    def __init__(
        self, keyword: KeywordPort, delay_s: float, busy: Callable[[], bool] = lambda: False, max_wait_s: float = 30.0
    ) -> None:
        self._keyword = keyword
        self._delay_s = delay_s
        self._busy = busy
        self._max_wait_s = max_wait_s
        self._waiting: dict[str, asyncio.Task] = {}
        self._tasks: set[asyncio.Task] = set()

    def notify(self, tenant: str) -> None:
        if tenant in self._waiting:
            return  # a rebuild is already scheduled and will read the newest generation
        task = asyncio.get_running_loop().create_task(self._refresh(tenant))
        self._waiting[tenant] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _refresh(self, tenant: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._max_wait_s
        try:
            await asyncio.sleep(self._delay_s)
            while self._busy() and loop.time() < deadline:
                await asyncio.sleep(max(self._delay_s, 0.05))
        finally:
            self._waiting.pop(tenant, None)
        try:
            await asyncio.to_thread(self._keyword.refresh, tenant)
        except Exception as exc:
            log.warning("keyword index refresh failed", exc_info=exc, extra={"fields": {"tenant": tenant}})

    async def drain(self) -> None:
        """Waits for scheduled rebuilds (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
