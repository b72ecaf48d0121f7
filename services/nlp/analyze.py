"""The Analyze stream: several operations over one text, run side by side, streamed as they finish.

All operations share one ``PreparedText``, so sentence embeddings are computed once. Each
result carries its duration and what its LLM calls cost; an operation that fails reports its ``google.rpc.Status``
in-band and the others carry on. The stream ends with ``done`` (counts of successes and
failures). If the client goes away, operations still running are cancelled.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from google.protobuf.message import Message

from docuthinker.nlp.v1 import nlp_service_pb2 as pb
from services.nlp import key_ideas, messages, metering, summarize, topics
from services.nlp.operations import NlpOperations
from services.nlp.prepared import PreparedText
from services.runtime.errors import DomainError, FieldViolation, InvalidArgument, status_from_exception

log = logging.getLogger("docuthinker.nlp.analyze")

Job = Callable[[], Awaitable[tuple[str, Message]]]

DEFAULT_OPERATIONS = (
    pb.OPERATION_ENTITIES,
    pb.OPERATION_SENTIMENT,
    pb.OPERATION_SUMMARY,
    pb.OPERATION_BULLET_SUMMARY,
    pb.OPERATION_KEY_IDEAS,
    pb.OPERATION_TOPICS,
    pb.OPERATION_ANALYTICS,
)
"""What an empty list means: every operation that runs offline without an LLM. Discussion
points and recommendations call the provider layer (seconds to minutes on the local model),
so they run only when asked for."""


def plan(ops: NlpOperations, prepared: PreparedText, operations: Sequence[int]) -> dict[int, Job]:
    requested = list(dict.fromkeys(operations)) or list(DEFAULT_OPERATIONS)
    known = set(pb.Operation.values()) - {pb.OPERATION_UNSPECIFIED}
    invalid = [op for op in requested if op not in known]
    if invalid:
        raise InvalidArgument(
            f"unknown or unspecified operation(s): {', '.join(str(op) for op in invalid)}",
            reason="UNKNOWN_OPERATION",
            violations=[FieldViolation("operations", f"unknown operation {op}") for op in invalid],
        )
    text = prepared.text

    async def summary(style: summarize.Style) -> tuple[str, Message]:
        return "summary", messages.summary_response(await ops.summary(prepared, style, summarize.Limits()))

    jobs: dict[int, Job] = {
        pb.OPERATION_ENTITIES: lambda: _field("entities", ops.entities(text, []), messages.entities_response),
        pb.OPERATION_SENTIMENT: lambda: _field("sentiment", ops.sentiment(text), messages.sentiment_response),
        pb.OPERATION_SUMMARY: lambda: summary(summarize.Style.NARRATIVE),
        pb.OPERATION_BULLET_SUMMARY: lambda: summary(summarize.Style.BULLETS),
        pb.OPERATION_KEY_IDEAS: lambda: _field(
            "key_ideas", ops.key_ideas(prepared, key_ideas.DEFAULT_IDEAS), messages.key_ideas_response
        ),
        pb.OPERATION_TOPICS: lambda: _field(
            "topics", ops.topics(prepared, topics.DEFAULT_TOPICS), messages.topics_response
        ),
        pb.OPERATION_DISCUSSION_POINTS: lambda: _field(
            "discussion_points", ops.discussion_points(prepared), messages.points_response
        ),
        pb.OPERATION_RECOMMENDATIONS: lambda: _field(
            "recommendations", ops.recommendations(prepared), messages.recommendations_response
        ),
        pb.OPERATION_ANALYTICS: lambda: _field(
            "analytics", ops.analytics(text, 10), messages.analytics_response
        ),
    }
    return {op: jobs[op] for op in requested}


async def _field(name: str, result: Awaitable, convert: Callable[..., Message]) -> tuple[str, Message]:
    return name, convert(await result)


async def _run(operation: int, job: Job) -> pb.OperationResult:
    started = time.perf_counter()
    try:
        with metering.metered() as meter:
            field, value = await job()
        result = pb.OperationResult(operation=operation, **{field: messages.with_llm_usage(value, meter)})
    except Exception as exc:  # noqa: BLE001 - reported in-band, per operation
        if not isinstance(exc, DomainError):
            log.exception("analyze operation %s failed", pb.Operation.Name(operation))
        result = pb.OperationResult(operation=operation, error=status_from_exception(exc))
    result.duration_ms = round((time.perf_counter() - started) * 1000, 3)
    return result


async def stream(jobs: dict[int, Job]) -> AsyncIterator[pb.AnalyzeResponse]:
    tasks = [asyncio.create_task(_run(op, job)) for op, job in jobs.items()]
    succeeded = failed = 0
    try:
        for next_done in asyncio.as_completed(tasks):
            result = await next_done
            if result.WhichOneof("result") == "error":
                failed += 1
            else:
                succeeded += 1
            yield pb.AnalyzeResponse(result=result)
    finally:
        for task in tasks:
            task.cancel()
    yield pb.AnalyzeResponse(done=pb.AnalyzeDone(succeeded=succeeded, failed=failed))
