"""Provider choice per task, with failover: the ONLY retry layer for LLM calls.

For a task the router tries the providers of its order (``DOCUTHINKER_PROVIDER_ORDER``, or
the task's entry in ``DOCUTHINKER_TASK_PROVIDERS``) that are configured, allowed to serve the
task, and let through by the gate (the orchestrator's circuit breakers), one attempt each.
A retryable ``ProviderError`` moves on to the next; anything else, or the last failure,
surfaces as a ``DomainError`` (see ``errors.to_domain_error``). A stream fails over only
before its first event: after that the caller has seen output.

Every attempt is reported to the listeners as a ``CallRecord`` (usage, cost, latency, error)
and added to the per-provider stats, prompt-cache hits included.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from dataclasses import replace
from typing import Any

from services.providers.base import (
    GenerationRequest,
    GenerationResult,
    Provider,
    ProviderError,
    StreamEvent,
    Usage,
)
from services.providers.call_stats import CallRecord, ProviderStats, StatsBook
from services.providers.errors import NoProviderAvailable, to_domain_error
from services.providers.json_output import validated
from services.providers.pricing import load_price_table
from services.providers.registry import FREE_FORM_TASKS, available, build_providers, enabling_variables, serves
from services.providers.settings import ProviderSettings
from services.runtime import domain_metrics, request_context, tracing
from services.runtime.errors import DeadlineExceeded, Unavailable

log = logging.getLogger("docuthinker.providers")

Listener = Callable[[CallRecord], Any]
"""Called after every provider attempt; may be a coroutine function."""
Gate = Callable[[str], bool]
"""``gate(provider) -> allowed?``: e.g. False while the provider's circuit is open."""


class Router:
    def __init__(self, providers: Mapping[str, Provider], settings: ProviderSettings) -> None:
        self._providers = dict(providers)
        self._settings = settings
        self._listeners: list[Listener] = []
        self._gate: Gate = lambda _provider: True
        self._stats = StatsBook()

    @classmethod
    def from_settings(cls, settings: ProviderSettings) -> Router:
        prices = load_price_table(settings.prices_file)
        return cls(build_providers(settings, prices), settings)

    # -- plumbing for the orchestrator -------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def set_gate(self, gate: Gate) -> None:
        self._gate = gate

    def stats(self) -> dict[str, ProviderStats]:
        return self._stats.snapshot()

    # -- choice --------------------------------------------------------------------------------

    def providers_for(self, task: str) -> list[str]:
        """Configured providers that may serve ``task``, in failover order (gate not applied)."""
        return [n for n in self._settings.order_for(task)
                if n in self._providers and serves(n, task) and available(self._providers[n])]

    def can_serve(self, task: str) -> bool:
        return bool(self.providers_for(task))

    def provider(self, name: str) -> Provider:
        return self._providers[name]

    def _candidates(self, task: str) -> list[Provider]:
        names = self.providers_for(task)
        if not names:
            raise self._no_provider(task)
        allowed = [self._providers[n] for n in names if self._gate(n)]
        if not allowed:
            raise Unavailable(
                f"every provider for task {task!r} is unavailable right now (circuit open): {', '.join(names)}",
                reason="PROVIDERS_CIRCUIT_OPEN",
                metadata={"task": task, "providers": ",".join(names)},
            )
        return allowed

    def _no_provider(self, task: str) -> NoProviderAvailable:
        order = self._settings.order_for(task)
        variables = enabling_variables(order, {n for n, p in self._providers.items() if available(p)})
        if variables:
            hint = "set " + ", or ".join(variables) + " to enable a provider"
        else:
            hint = "add a configured provider for it to DOCUTHINKER_PROVIDER_ORDER / DOCUTHINKER_TASK_PROVIDERS"
        local_note = ""
        if "local" in order and task not in FREE_FORM_TASKS:
            local_note = f"; the offline local model only serves {', '.join(sorted(FREE_FORM_TASKS))}"
        return NoProviderAvailable(
            f"no LLM provider can serve task {task!r}{local_note}: {hint}",
            reason="NO_PROVIDER_AVAILABLE",
            metadata={"task": task, "enable_with": ",".join(variables)},
        )

    # -- calls ---------------------------------------------------------------------------------

    def _deadline(self, request: GenerationRequest) -> float | None:
        """When the whole call (every attempt) must be over: the request's or the RPC's limit."""
        limits = [] if request.timeout_s is None else [request.timeout_s]
        ctx = request_context.current()
        if ctx is not None and (remaining := ctx.time_remaining()) is not None:
            limits.append(remaining)
        return time.monotonic() + min(limits) if limits else None

    def _attempt_request(self, request: GenerationRequest, deadline: float | None, task: str) -> GenerationRequest:
        """One attempt gets ``provider_timeout_s`` at most, and never more than is left."""
        timeout = self._settings.provider_timeout_s
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DeadlineExceeded(f"no time left for task {task!r}", metadata={"task": task})
            timeout = min(timeout, remaining)
        return replace(request, timeout_s=timeout)

    async def generate(self, task: str, request: GenerationRequest, *, pinned: str | None = None) -> GenerationResult:
        """Through the failover order, or on ``pinned`` alone (the caller checked it may serve ``task``
        and its circuit): either way with the deadline, JSON validation and call accounting."""
        deadline = self._deadline(request)
        errors: list[ProviderError] = []
        for provider in [self._providers[pinned]] if pinned else self._candidates(task):
            attempt = self._attempt_request(request, deadline, task)
            started = time.monotonic()
            result: GenerationResult | None = None
            try:
                result = await provider.generate(attempt)
                if request.json_schema is not None:
                    validated(provider.name, result.text, request.json_schema)
            except ProviderError as error:
                # A rejected answer was still paid for.
                spent = result.usage if result is not None else Usage()
                await self._report(CallRecord(provider.name, task, _tenant(), time.monotonic() - started,
                                              error=error, usage=spent))
                errors.append(error)
                if not error.retryable:
                    break
                log.warning("provider %s failed for %s (%s); failing over", provider.name, task, error.kind)
                continue
            await self._report(CallRecord(provider.name, task, _tenant(), time.monotonic() - started,
                                          result=result, usage=result.usage))
            return result
        raise to_domain_error(task, errors)

    async def stream(self, task: str, request: GenerationRequest) -> AsyncGenerator[StreamEvent, None]:
        deadline = self._deadline(request)
        errors: list[ProviderError] = []
        for provider in self._candidates(task):
            attempt = self._attempt_request(request, deadline, task)
            started = time.monotonic()
            emitted = False
            try:
                async with aclosing(provider.stream(attempt)) as events:
                    async for event in events:
                        if event.final is not None:
                            await self._finish_stream(provider.name, task, request, event.final, started, errors)
                        emitted = True
                        yield event
                return
            except ProviderError as error:
                await self._report(CallRecord(provider.name, task, _tenant(), time.monotonic() - started, error=error))
                errors.append(error)
                if emitted or not error.retryable:
                    break
                log.warning("provider %s failed for %s (%s); failing over", provider.name, task, error.kind)
        raise to_domain_error(task, errors)

    async def _finish_stream(
        self,
        provider: str,
        task: str,
        request: GenerationRequest,
        final: GenerationResult,
        started: float,
        errors: list[ProviderError],
    ) -> None:
        latency = time.monotonic() - started
        if request.json_schema is not None:
            try:
                validated(provider, final.text, request.json_schema)
            except ProviderError as error:
                # Deltas are already out: no failover, but the call was paid for.
                await self._report(CallRecord(provider, task, _tenant(), latency, error=error, usage=final.usage))
                raise to_domain_error(task, [*errors, error]) from error
        await self._report(CallRecord(provider, task, _tenant(), latency, result=final, usage=final.usage))

    async def _report(self, record: CallRecord) -> None:
        self._stats.record(record)
        _observe(record)
        for listener in self._listeners:
            try:
                outcome = listener(record)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                log.exception("provider call listener failed")


def _observe(record: CallRecord) -> None:
    """Metrics and a span of one provider call (its tokens as span attributes)."""
    model = record.result.model if record.result is not None else ""
    usage = record.usage
    outcome = "ok" if record.error is None else record.error.kind
    domain_metrics.LLM_CALLS.labels(record.provider, model, str(outcome)).inc()
    domain_metrics.LLM_SECONDS.labels(record.provider).observe(record.latency_s)
    for kind, count in (("input", usage.input_tokens), ("output", usage.output_tokens),
                        ("cache_read", usage.cache_read_tokens)):
        if count:
            domain_metrics.LLM_TOKENS.labels(record.provider, model, kind).inc(count)
    tracing.record_span(
        "llm.generate", time.perf_counter() - record.latency_s,
        **{"gen_ai.system": record.provider, "gen_ai.request.model": model or None, "docuthinker.task": record.task,
           "gen_ai.usage.input_tokens": usage.input_tokens + usage.cache_read_tokens,
           "gen_ai.usage.output_tokens": usage.output_tokens, "docuthinker.outcome": str(outcome)},
    )


def _tenant() -> str:
    return request_context.current_tenant()
