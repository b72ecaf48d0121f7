"""Cancellation by deadline for provider calls and streams.

A stream's deadline must only cover the awaits *inside* the stream: an ``asyncio.timeout``
held across a ``yield`` would fire into the consumer's task, wherever it happens to be.
So ``Deadline.iterate`` re-arms the timeout around each ``anext`` instead.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

from services.providers.base import ProviderError
from services.providers.errors import timeout_error

T = TypeVar("T")


class Deadline:
    def __init__(self, provider: str, timeout_s: float | None) -> None:
        self._provider = provider
        # time.monotonic, not the loop's clock: worker threads read it too (local model).
        self._at = None if timeout_s is None else time.monotonic() + timeout_s
        self.timeout_s = timeout_s

    def remaining(self) -> float | None:
        if self._at is None:
            return None
        return self._at - time.monotonic()

    def _expired(self) -> ProviderError:
        if self.timeout_s is None:
            return timeout_error(self._provider)
        return timeout_error(self._provider, f"no answer within the {self.timeout_s:g} s deadline")

    async def run(self, awaitable: Awaitable[T]) -> T:
        remaining = self.remaining()
        if remaining is not None and remaining <= 0:
            if inspect.iscoroutine(awaitable):
                awaitable.close()
            raise self._expired()
        try:
            async with asyncio.timeout(remaining):
                return await awaitable
        except TimeoutError as exc:
            # Ours or the HTTP client's own read timeout: the same thing to the caller.
            raise self._expired() from exc

    async def iterate(self, items: AsyncIterator[T]) -> AsyncIterator[T]:
        iterator = aiter(items)
        while True:
            try:
                item = await self.run(anext(iterator))
            except StopAsyncIteration:
                return
            yield item
