"""The Analyze stream: several operations over one text, run side by side, reported as they finish.

All operations share one ``PreparedText``, so sentence embeddings are computed once. Each
outcome carries its duration and what its LLM calls cost; an operation that fails reports its
error in its outcome and the others carry on. The stream ends with ``AnalyzeDone`` (counts of
successes and failures). If the client goes away, operations still running are cancelled.
The servicer maps requests and events to protobuf (``messages``).
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

from services.nlp import key_ideas, metering, summarize, topics
from services.nlp.operations import NlpOperations
from services.nlp.prepared import PreparedText
from services.runtime.errors import DomainError

log = logging.getLogger("docuthinker.nlp.analyze")


class Operation(enum.Enum):
    ENTITIES = "entities"
    SENTIMENT = "sentiment"
    SUMMARY = "summary"
    BULLET_SUMMARY = "bullet_summary"
    KEY_IDEAS = "key_ideas"
    TOPICS = "topics"
    DISCUSSION_POINTS = "discussion_points"
    RECOMMENDATIONS = "recommendations"
    ANALYTICS = "analytics"


Job = Callable[[], Awaitable[object]]

DEFAULT_OPERATIONS = (
    Operation.ENTITIES,
    Operation.SENTIMENT,
    Operation.SUMMARY,
    Operation.BULLET_SUMMARY,
    Operation.KEY_IDEAS,
    Operation.TOPICS,
    Operation.ANALYTICS,
)
"""What an empty list means: every operation that runs offline without an LLM. Discussion
points and recommendations call the provider layer (seconds to minutes on the local model),
so they run only when asked for."""


@dataclass(frozen=True)
class OperationOutcome:
    """One operation's result (``value``, the domain result) or its ``error``."""

    operation: Operation
    value: object | None
    meter: metering.Meter
    error: BaseException | None
    duration_ms: float


@dataclass(frozen=True)
class AnalyzeDone:
    succeeded: int
    failed: int


def plan(ops: NlpOperations, prepared: PreparedText, operations: Sequence[Operation]) -> dict[Operation, Job]:
    requested = list(dict.fromkeys(operations)) or list(DEFAULT_OPERATIONS)
    text = prepared.text
    jobs: dict[Operation, Job] = {
        Operation.ENTITIES: lambda: ops.entities(text, []),
        Operation.SENTIMENT: lambda: ops.sentiment(text),
        Operation.SUMMARY: lambda: ops.summary(prepared, summarize.Style.NARRATIVE, summarize.Limits()),
        Operation.BULLET_SUMMARY: lambda: ops.summary(prepared, summarize.Style.BULLETS, summarize.Limits()),
        Operation.KEY_IDEAS: lambda: ops.key_ideas(prepared, key_ideas.DEFAULT_IDEAS),
        Operation.TOPICS: lambda: ops.topics(prepared, topics.DEFAULT_TOPICS),
        Operation.DISCUSSION_POINTS: lambda: ops.discussion_points(prepared),
        Operation.RECOMMENDATIONS: lambda: ops.recommendations(prepared),
        Operation.ANALYTICS: lambda: ops.analytics(text, 10),
    }
    return {op: jobs[op] for op in requested}


async def _run(operation: Operation, job: Job) -> OperationOutcome:
    started = time.perf_counter()
    value: object | None = None
    error: BaseException | None = None
    with metering.metered() as meter:
        try:
            value = await job()
        except Exception as exc:
            if not isinstance(exc, DomainError):
                log.exception("analyze operation %s failed", operation.name)
            error = exc
    return OperationOutcome(operation, value, meter, error, round((time.perf_counter() - started) * 1000, 3))


async def stream(jobs: dict[Operation, Job]) -> AsyncIterator[OperationOutcome | AnalyzeDone]:
    tasks = [asyncio.create_task(_run(op, job)) for op, job in jobs.items()]
    succeeded = failed = 0
    try:
        for next_done in asyncio.as_completed(tasks):
            outcome = await next_done
            if outcome.error is not None:
                failed += 1
            else:
                succeeded += 1
            yield outcome
    finally:
        for task in tasks:
            task.cancel()
    yield AnalyzeDone(succeeded, failed)
