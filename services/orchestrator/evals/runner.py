"""Evaluation runs as background jobs: each question of a set asked of the answer engine, scored, stored.

``start`` checks the request, takes one of the tenant's run slots (``EvalStore.create_run``) and returns at
once; the run goes on in a task of this orchestrator, which renews its lease while it works. Questions run
``item_concurrency`` at a time within a run, and at most ``max_inflight`` across every run of the process, so
evaluations never take every answer slot from interactive users. Each question's latency is measured around
its call. A question the engine fails on (unavailable, timed out) is recorded with its error and the run goes
on; an error that every question would meet (the request itself refused: a bad document id, no permission)
fails the run at once.

Cancelling flags the run in the database, so the orchestrator that runs it stops it whichever replica got the
request: it reads the flag before each question and, when the run is its own, stops at once (the questions in
flight are abandoned; the finished ones are kept). Stopping the orchestrator ends its runs ``interrupted``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from services.orchestrator.evals.matching import Cited, Reply, judge
from services.orchestrator.evals.records import (
    CANCELLED,
    FAILED,
    INTERRUPTED,
    MODES,
    SUCCEEDED,
    CitedSpan,
    EvalRun,
    ItemResult,
    RunSettings,
)
from services.orchestrator.evals.sets import EvalItem
from services.orchestrator.evals.store import EvalStore
from services.runtime import request_context
from services.runtime.errors import (
    DomainError,
    FieldViolation,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from services.storage.replica import replica_id

log = logging.getLogger("docuthinker.orchestrator.evals")

MAX_TOP_K = 50
MAX_DOCUMENT_IDS = 100
MAX_LABEL_CHARS = 200
_RUN_FATAL = (InvalidArgument, PermissionDenied, Unauthenticated, NotFound)
"""Errors of the request itself, which every question of the run would meet."""


@dataclass(frozen=True)
class EngineAnswer:
    """An answer engine's reply, as the evaluation reads it."""

    answer: str
    support: str
    """SUPPORTED, PARTIAL or INSUFFICIENT."""
    citations: tuple[CitedSpan, ...]
    short_answer: str = ""
    engine: str = ""
    """``provider/model`` of the engine that answered."""


class AnswerSource(Protocol):
    async def ask(self, question: str, settings: RunSettings, timeout: float) -> EngineAnswer: ...


class _RunFailed(Exception):
    pass


class _CancelledElsewhere(Exception):
    """The run was cancelled through another orchestrator (its flag was read here)."""


class _RunLost(Exception):
    """Another orchestrator ended the run (its lease ran out here): stop without writing."""


class EvalRunner:
    def __init__(
        self,
        store: EvalStore,
        source: AnswerSource,
        *,
        identities: Callable[[], Mapping[str, Any]] = dict,
        max_concurrent_runs: int = 2,
        item_concurrency: int = 2,
        max_inflight: int = 4,
        item_timeout_s: float = 120.0,
        lease_s: float = 60.0,
        owner: str | None = None,
    ) -> None:
        self._store = store
        self._source = source
        self._identities = identities
        self.max_concurrent_runs = max_concurrent_runs
        self.item_concurrency = item_concurrency
        self.item_timeout_s = item_timeout_s
        self.lease_s = lease_s
        self.owner = owner or replica_id()
        self._inflight = asyncio.Semaphore(max_inflight)
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._stopping = False

    # -- requests -------------------------------------------------------------------------------
    def start(self, tenant: str, set_id: str, settings: RunSettings, label: str = "") -> EvalRun:
        _validate(settings, label)
        evalset = self._store.get_set(tenant, set_id)
        run = self._store.create_run(tenant, evalset, settings, label.strip(), self._identities(), owner=self.owner,
                                     lease_s=self.lease_s, max_concurrent=self.max_concurrent_runs)
        task = asyncio.get_running_loop().create_task(self._execute(tenant, run, evalset.items),
                                                      name=f"eval-run-{run.id}")
        self._tasks[run.id] = task
        task.add_done_callback(lambda _: self._tasks.pop(run.id, None))
        log.info("evaluation run started", extra={"fields": {"run_id": run.id, "set_id": set_id,
                                                             "items": run.total, **settings.as_json()}})
        return run

    async def cancel(self, tenant: str, run_id: str) -> EvalRun:
        run = self._store.request_cancel(tenant, run_id)
        task = self._tasks.get(run_id)
        if task is not None and run.active:
            task.cancel()
            await asyncio.wait([task], timeout=10)
        return self._store.get_run(tenant, run_id)

    def running(self) -> int:
        """Runs of this orchestrator in progress."""
        return len(self._tasks)

    async def wait(self, run_id: str, timeout: float | None = None) -> None:
        """Waits for one of this orchestrator's runs to end (tests, tools)."""
        task = self._tasks.get(run_id)
        if task is not None:
            await asyncio.wait([task], timeout=timeout)

    async def stop(self) -> None:
        """Ends this orchestrator's runs ``interrupted`` (an orderly shutdown)."""
        self._stopping = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=10)
        self._store.release_owned(self.owner, INTERRUPTED, "the orchestrator stopped before the end")

    # -- the job --------------------------------------------------------------------------------
    async def _execute(self, tenant: str, run: EvalRun, items: Sequence[EvalItem]) -> None:
        token = request_context.bind(request_context.RequestContext(f"eval-{run.id}-{uuid.uuid4().hex[:8]}", tenant))
        engines: set[str] = set()
        pending = list(enumerate(items, start=1))
        state, error = SUCCEEDED, ""
        renewal = asyncio.get_running_loop().create_task(self._renew(tenant, run.id, asyncio.current_task()))

        async def worker() -> None:
            while pending:
                position, item = pending.pop(0)
                if self._store.renew(tenant, run.id, self.owner, self.lease_s)[1]:
                    raise _CancelledElsewhere
                result = await self._ask(item, position, run.settings)
                if result.engine:
                    engines.add(result.engine)
                if not self._store.record(tenant, run.id, self.owner, result):
                    raise _RunLost

        loop = asyncio.get_running_loop()
        workers = [loop.create_task(worker()) for _ in range(min(self.item_concurrency, len(items)))]
        try:
            await asyncio.gather(*workers)
        except (asyncio.CancelledError, _CancelledElsewhere):
            state = INTERRUPTED if self._stopping else CANCELLED
            error = "the orchestrator stopped before the end" if self._stopping else ""
        except _RunFailed as exc:
            state, error = FAILED, str(exc)
        except _RunLost:
            log.warning("evaluation run lost to another orchestrator", extra={"fields": {"run_id": run.id}})
            return
        except Exception as exc:
            log.exception("evaluation run failed", extra={"fields": {"run_id": run.id}})
            state, error = FAILED, f"internal error: {type(exc).__name__}"
        finally:
            for task in (renewal, *workers):  # one worker's failure ends the others' questions too
                task.cancel()
            request_context.unbind(token)
        identities = {**run.identities, "answer_engines": sorted(engines)}
        self._store.finish(tenant, run.id, self.owner, state, error=error, identities=identities)
        log.info("evaluation run ended", extra={"fields": {"run_id": run.id, "state": state}})

    async def _renew(self, tenant: str, run_id: str, job: asyncio.Task[Any] | None) -> None:
        """Keeps the lease while the run works; stops the job when the run was cancelled or lost meanwhile."""
        while True:
            await asyncio.sleep(self.lease_s / 3)
            try:
                held, cancelled = self._store.renew(tenant, run_id, self.owner, self.lease_s)
            except Exception:
                log.warning("evaluation lease renewal failed", exc_info=True, extra={"fields": {"run_id": run_id}})
                continue
            if (cancelled or not held) and job is not None:
                job.cancel()
                return

    async def _ask(self, item: EvalItem, position: int, settings: RunSettings) -> ItemResult:
        async with self._inflight:
            started = time.perf_counter()
            try:
                answer = await asyncio.wait_for(self._source.ask(item.question, settings, self.item_timeout_s),
                                                self.item_timeout_s)
            except _RUN_FATAL as exc:
                raise _RunFailed(f"the answer engine refused the run's request: {exc}") from exc
            except (TimeoutError, DomainError) as exc:
                seconds = time.perf_counter() - started
                reason = f"timed out after {self.item_timeout_s:g} s" if isinstance(exc, asyncio.TimeoutError) \
                    else f"{exc.code.name}: {exc}"
                return ItemResult(position, item, "", "", "", (), round(seconds, 4), False, False, False, reason)
            seconds = time.perf_counter() - started
        reply = Reply(answer.answer, answer.support,
                      tuple(Cited(c.filename, c.page, c.sheet_name, c.excerpt, document_id=c.document_id)
                            for c in answer.citations), seconds)
        verdict = judge(item.expected, reply)
        return ItemResult(position, item, answer.answer, answer.short_answer, answer.support, answer.citations,
                          round(seconds, 4), verdict.answered, verdict.correct, verdict.citation_hit,
                          engine=answer.engine)


def _validate(settings: RunSettings, label: str) -> None:
    violations = []
    if settings.mode not in MODES:
        violations.append(FieldViolation("mode", "answer or agent"))
    if not 0 <= settings.top_k <= MAX_TOP_K:
        violations.append(FieldViolation("top_k", f"0 (the service's default) to {MAX_TOP_K}"))
    if len(settings.document_ids) > MAX_DOCUMENT_IDS:
        violations.append(FieldViolation("document_ids", f"at most {MAX_DOCUMENT_IDS}"))
    if any(not d.strip() for d in settings.document_ids):
        violations.append(FieldViolation("document_ids", "an id must not be blank"))
    if len(label) > MAX_LABEL_CHARS:
        violations.append(FieldViolation("label", f"at most {MAX_LABEL_CHARS} characters"))
    if violations:
        raise InvalidArgument("invalid evaluation run request", reason="INVALID_EVAL_RUN", violations=violations)
