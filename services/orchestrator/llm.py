"""The orchestrator's view of the provider router, with its circuit breakers and cost recorder plugged in.

The router is the one retry/failover layer for LLM calls. Here its gate is the provider
circuits (an open circuit is skipped; after the cooldown one probe goes through) and its
listener feeds both the circuits and the cost tracker. The listener also counts the attempts
made inside the current request, so a subtask can say which providers it tried.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from services.orchestrator.circuit_breaker import CircuitBreakers
from services.orchestrator.costs import CostTracker, current_intent
from services.orchestrator.downstream import provider_circuit
from services.providers.base import GenerationRequest, GenerationResult, Provider, ProviderError, Usage
from services.providers.call_stats import CallRecord
from services.providers.errors import to_domain_error
from services.providers.router import Router
from services.runtime.errors import FailedPrecondition


@dataclass
class AttemptLog:
    records: list[CallRecord] = field(default_factory=list)

    @property
    def providers(self) -> list[str]:
        return [r.provider for r in self.records]


_attempts: contextvars.ContextVar[AttemptLog | None] = contextvars.ContextVar("docuthinker_llm_attempts", default=None)


@contextmanager
def track_attempts() -> Iterator[AttemptLog]:
    """Collects the provider attempts made inside the block (this task and the tasks it starts)."""
    log = AttemptLog()
    token = _attempts.set(log)
    try:
        yield log
    finally:
        _attempts.reset(token)


class LanguageModels:
    def __init__(self, router: Router, breakers: CircuitBreakers, costs: CostTracker) -> None:
        self.router = router
        self._breakers = breakers
        self._costs = costs

    def install(self) -> None:
        """Plugs the circuits (gate) and the cost recorder (listener) into the router."""
        self.router.set_gate(lambda provider: self._breakers.allow(provider_circuit(provider)))
        self.router.add_listener(self.on_call)

    def on_call(self, record: CallRecord) -> None:
        circuit = provider_circuit(record.provider)
        if record.error is not None and record.error.retryable:
            self._breakers.record_failure(circuit)
        else:
            # Success, or a refusal that says nothing about the provider's health (bad request, auth).
            self._breakers.record_success(circuit)
        if record.usage != Usage():
            model = record.result.model if record.result is not None else self._model_of(record.provider)
            self._costs.record(record.provider, model, record.usage, current_intent())
        attempts = _attempts.get()
        if attempts is not None:
            attempts.records.append(record)

    def _model_of(self, provider: str) -> str:
        try:
            return self.router.provider(provider).model
        except KeyError:
            return provider

    # -- choice --------------------------------------------------------------------------
    def can_serve(self, task: str) -> bool:
        return self.router.can_serve(task)

    def remote_can_serve(self, task: str) -> bool:
        """Whether a vendor model (not the offline one) is configured for ``task``."""
        return any(name != "local" for name in self.router.providers_for(task))

    def likely_provider(self, task: str) -> Provider | None:
        """The provider that would get the first attempt now (circuits consulted, no probe taken)."""
        for name in self.router.providers_for(task):
            if not self._breakers.is_open(provider_circuit(name)):
                return self.router.provider(name)
        return None

    # -- calls ---------------------------------------------------------------------------
    async def generate(self, task: str, request: GenerationRequest, provider: str | None = None) -> GenerationResult:
        """A call through the router's failover, or pinned to ``provider`` (still guarded and costed)."""
        if not provider:
            return await self.router.generate(task, request)
        if provider not in self.router.providers_for(task):
            raise FailedPrecondition(
                f"provider {provider!r} is not configured for task {task!r};"
                f" configured: {', '.join(self.router.providers_for(task)) or 'none'}",
                reason="PROVIDER_NOT_CONFIGURED",
            )
        return await self._pinned(task, request, self.router.provider(provider))

    async def _pinned(self, task: str, request: GenerationRequest, provider: Provider) -> GenerationResult:
        if not self._breakers.allow(provider_circuit(provider.name)):
            raise to_domain_error(task, [ProviderError(provider.name, "circuit open", True, "provider_down")])
        return await self.router.generate(task, request, pinned=provider.name)
