"""Per-document asyncio locks: one ingest, re-index or delete of a document at a time."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager


class KeyedLocks:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}
        self._last_release = -math.inf
        self.clock = clock
        """The monotonic clock that ``quiet_for`` reads; whoever paces itself on it reads the same one."""

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
                self._last_release = self.clock()
            else:
                self._locks[key] = (lock, users - 1)

    def busy(self, key: str) -> bool:
        return key in self._locks

    def quiet_for(self) -> float:
        """Seconds since the last key was released; 0 while any key is held."""
        return 0.0 if self._locks else self.clock() - self._last_release
