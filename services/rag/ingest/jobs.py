"""Plumbing of an ingest job: its event queue (producer task -> at most one RPC consumer)
and its per-stage timer."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from services.rag.documents import IngestEvent
from services.runtime import domain_metrics, tracing


@dataclass
class StageTimer:
    """Milliseconds per stage, for the "document ingested" log line (the benchmark reads it); each lap
    is also an ``ingest.<stage>`` span and a sample of the ingest stage duration histogram."""

    stages: dict[str, float] = field(default_factory=dict)
    _mark: float = field(default_factory=time.perf_counter)

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.stages[stage] = round((now - self._mark) * 1000, 2)
        name = stage.removesuffix("_ms")
        domain_metrics.INGEST_STAGE_SECONDS.labels(name).observe(now - self._mark)
        tracing.record_span(f"ingest.{name}", self._mark, now)
        self._mark = now


class IngestJob:
    """Events of one ingest, produced by a background task and consumed by at most one RPC."""

    _END = object()

    def __init__(self) -> None:
        self.queue: asyncio.Queue = asyncio.Queue()
        self.task: asyncio.Task | None = None

    def emit(self, event: IngestEvent) -> None:
        self.queue.put_nowait(event)

    def fail(self, error: BaseException) -> None:
        """The job ended with this error: the consumer raises it where it is reading."""
        self.queue.put_nowait(error)

    def finish(self) -> None:
        self.queue.put_nowait(self._END)

    async def events(self) -> AsyncIterator[IngestEvent]:
        while True:
            item = await self.queue.get()
            if item is self._END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
