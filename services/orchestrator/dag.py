"""The task DAG: validation (unknown ids, cycles), parallel dispatch, per-task failover, aggregation.

A task starts as soon as every task it depends on has succeeded (so independent branches run
in parallel, wave after wave, without waiting for a whole wave to finish); its params are
completed from its dependencies' outputs (``bind``). A task whose operation fails with a
transient error moves on to its fallback operations (the next provider) in order. A task
whose dependency failed is skipped. Results are yielded as each task completes.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from services.orchestrator.operations import Outcome
from services.runtime.errors import FailedPrecondition, InvalidArgument

Runner = Callable[[str, Mapping[str, Any]], Awaitable[Outcome]]


@dataclass(frozen=True)
class Task:
    id: str
    operation: str
    params: Mapping[str, Any] = field(default_factory=dict)
    depends_on: tuple[str, ...] = ()
    bind: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """param name -> (task id, key in that task's output data)."""
    fallbacks: tuple[str, ...] = ()
    """Operations tried in order when ``operation`` fails transiently (the next provider)."""


class TaskState(enum.StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class TaskResult:
    task: Task
    state: TaskState
    data: dict[str, Any] = field(default_factory=dict)
    error: Exception | None = None
    provider: str = ""
    attempts: int = 0
    duration_ms: float = 0.0
    operation: str = ""
    """The operation that produced the result (a fallback's name when one was used)."""
    params: dict[str, Any] = field(default_factory=dict)
    """The params it ran with, dependencies' outputs included (what a dead letter keeps)."""


def validate(tasks: Sequence[Task]) -> list[str]:
    """A topological order of the task ids; raises on duplicates, unknown dependencies or a cycle."""
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        raise InvalidArgument("duplicate task ids in the plan", reason="DUPLICATE_TASK")
    known = set(ids)
    for task in tasks:
        missing = [d for d in (*task.depends_on, *(src for src, _ in task.bind.values())) if d not in known]
        if missing:
            raise InvalidArgument(f"task {task.id} depends on unknown task(s) {missing}", reason="UNKNOWN_DEPENDENCY")
        unbound = [src for src, _ in task.bind.values() if src not in task.depends_on]
        if unbound:
            raise InvalidArgument(f"task {task.id} binds outputs of {unbound} without depending on them",
                                  reason="UNDECLARED_DEPENDENCY")
    indegree = {t.id: len(set(t.depends_on)) for t in tasks}
    dependents: dict[str, list[str]] = {t.id: [] for t in tasks}
    for task in tasks:
        for dep in set(task.depends_on):
            dependents[dep].append(task.id)
    order = [i for i in ids if indegree[i] == 0]
    for current in order:  # Kahn's algorithm; `order` grows while we walk it
        for nxt in dependents[current]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                order.append(nxt)
    if len(order) != len(tasks):
        cyclic = sorted(i for i in ids if indegree[i] > 0)
        raise FailedPrecondition(f"circular dependency between tasks {cyclic}", reason="CIRCULAR_DEPENDENCY")
    return order


async def execute(
    tasks: Sequence[Task], run: Runner, is_transient: Callable[[BaseException], bool]
) -> AsyncIterator[TaskResult]:
    """Runs the DAG, yielding each task's result as it completes (skips included)."""
    validate(tasks)
    pending = {t.id: t for t in tasks}
    results: dict[str, TaskResult] = {}
    running: dict[asyncio.Task[TaskResult], str] = {}
    try:
        while pending or running:
            for skipped in _skip_blocked(pending, results):
                yield skipped
            ready = [t for t in pending.values() if all(
                d in results and results[d].state is TaskState.SUCCEEDED for d in t.depends_on)]
            for task in ready:
                del pending[task.id]
                running[asyncio.create_task(_run_task(task, results, run, is_transient))] = task.id
            if not running:
                break
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for finished in done:
                running.pop(finished)
                result = finished.result()
                results[result.task.id] = result
                yield result
    finally:
        for leftover in running:
            leftover.cancel()


def _skip_blocked(pending: dict[str, Task], results: dict[str, TaskResult]) -> list[TaskResult]:
    skipped: list[TaskResult] = []
    changed = True
    while changed:
        changed = False
        for task in list(pending.values()):
            blocked = [d for d in task.depends_on if d in results and results[d].state is not TaskState.SUCCEEDED]
            if blocked:
                del pending[task.id]
                result = TaskResult(task, TaskState.SKIPPED, {"blocked_by": blocked}, operation=task.operation)
                results[task.id] = result
                skipped.append(result)
                changed = True
    return skipped


async def _run_task(
    task: Task, results: Mapping[str, TaskResult], run: Runner, is_transient: Callable[[BaseException], bool]
) -> TaskResult:
    params = dict(task.params)
    for name, (source, key) in task.bind.items():
        params[name] = results[source].data.get(key)
    started = time.perf_counter()
    attempts = 0
    error: Exception | None = None
    operation = task.operation
    for operation in (task.operation, *task.fallbacks):
        try:
            outcome = await run(operation, params)
        except Exception as exc:  # noqa: BLE001 - a task's failure is its result
            attempts += 1
            error = exc
            if not is_transient(exc):
                break
            continue
        return TaskResult(
            task,
            TaskState.SUCCEEDED,
            outcome.data,
            provider=outcome.provider,
            attempts=attempts + outcome.attempts,
            duration_ms=(time.perf_counter() - started) * 1000,
            operation=operation,
            params=params,
        )
    return TaskResult(
        task,
        TaskState.FAILED,
        error=error,
        attempts=attempts,
        duration_ms=(time.perf_counter() - started) * 1000,
        operation=operation,
        params=params,
    )


def aggregate(results: Sequence[TaskResult]) -> tuple[bool, dict[str, Any]]:
    """(success, data): one task's data as is; several keyed by task id."""
    success = all(r.state is TaskState.SUCCEEDED for r in results)
    if len(results) == 1:
        return success, dict(results[0].data)
    return success, {r.task.id: dict(r.data) for r in results if r.state is TaskState.SUCCEEDED}
