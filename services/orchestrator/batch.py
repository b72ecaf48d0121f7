"""Batch processing: one operation over many documents, in batches of 10, at most 3 batches at once.

Items of a batch run concurrently; each item's result (or error) is streamed as soon as it
completes, followed by a progress event, and the stream ends with the success rate. A
stored document is extracted first; an item that fails transiently becomes a dead letter.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from services.orchestrator.costs import intent_scope
from services.orchestrator.dlq import DeadLetterQueue
from services.orchestrator.downstream import is_transient
from services.orchestrator.operations import Operations
from services.orchestrator.plans import BATCH_OPERATIONS
from services.runtime.errors import FieldViolation, InvalidArgument

APPLY = "document.apply"


@dataclass(frozen=True)
class BatchItem:
    id: str = ""
    text: str = ""
    document_id: str = ""


@dataclass(frozen=True)
class ItemResult:
    document_id: str
    success: bool
    data: dict[str, Any] = field(default_factory=dict)
    error: Exception | None = None


@dataclass(frozen=True)
class Progress:
    completed: int
    total: int


@dataclass(frozen=True)
class Summary:
    total_processed: int
    total_failed: int
    success_rate: float


def chunks(items: Sequence[BatchItem], size: int) -> list[list[BatchItem]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


class BatchProcessor:
    def __init__(
        self,
        operations: Operations,
        dlq: DeadLetterQueue,
        *,
        batch_size: int = 10,
        concurrency: int = 3,
        max_documents: int = 1000,
    ) -> None:
        self._operations = operations
        self._dlq = dlq
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.max_documents = max_documents

    def validate(self, items: Sequence[BatchItem], operation: str) -> str:
        """The operation to run; raises before any work starts on a malformed request."""
        if operation not in BATCH_OPERATIONS:
            raise InvalidArgument(
                f"unknown batch operation {operation!r}",
                reason="UNKNOWN_OPERATION",
                violations=[FieldViolation("operation", "one of " + ", ".join(BATCH_OPERATIONS))],
            )
        if not items:
            raise InvalidArgument("documents is empty", reason="EMPTY_BATCH",
                                  violations=[FieldViolation("documents", "at least one document")])
        if len(items) > self.max_documents:
            raise InvalidArgument(
                f"{len(items)} documents; at most {self.max_documents} per batch request", reason="BATCH_TOO_LARGE"
            )
        return BATCH_OPERATIONS[operation]

    async def run(self, items: Sequence[BatchItem], operation: str,
                  tenant: str) -> AsyncIterator[ItemResult | Progress | Summary]:
        target = self.validate(items, operation)
        queue: asyncio.Queue[ItemResult] = asyncio.Queue()
        gate = asyncio.Semaphore(self.concurrency)

        async def run_batch(batch: list[BatchItem], offset: int) -> None:
            async with gate:
                await asyncio.gather(*(self._item(item, offset + n, target, queue, tenant)
                                       for n, item in enumerate(batch)))

        with intent_scope("batch.multiDocument"):
            workers = [
                asyncio.create_task(run_batch(batch, n * self.batch_size))
                for n, batch in enumerate(chunks(items, self.batch_size))
            ]
            failed = 0
            try:
                for completed in range(1, len(items) + 1):
                    result = await queue.get()
                    failed += 0 if result.success else 1
                    yield result
                    yield Progress(completed, len(items))
            finally:
                for worker in workers:
                    worker.cancel()
        processed = len(items)
        yield Summary(processed, failed, round((processed - failed) / processed, 4))

    async def _item(self, item: BatchItem, index: int, operation: str, queue: asyncio.Queue[ItemResult],
                    tenant: str) -> None:
        name = item.id or item.document_id or f"item-{index}"
        params: dict[str, Any] = {"operation": operation}
        if item.text:
            params["text"] = item.text
        elif item.document_id:
            params["document_id"] = item.document_id
        try:
            if len(params) == 1:
                raise InvalidArgument("a batch document needs text or document_id", reason="MISSING_SOURCE")
            outcome = await self._operations.run(APPLY, params, tenant)
        except Exception as exc:  # noqa: BLE001 - reported per item
            data: dict[str, Any] = {}
            if is_transient(exc):
                data["dead_letter_id"] = self._dlq.enqueue(APPLY, params, str(exc), tenant).id
            await queue.put(ItemResult(name, False, data, exc))
            return
        await queue.put(ItemResult(name, True, outcome.data))
