"""The other services of the mesh as the orchestrator calls them: each through its circuit breaker.

The typed clients (``services/clients/<service>.py``) raise ``runtime.errors.RemoteError``, which
keeps the remote ``google.rpc.Status``, so a caller's mistake reported by the NLP service reaches
the orchestrator's caller unchanged. Which failures open a circuit, and which are worth a retry
or a dead letter, is decided here, once.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import grpc

from services.clients.graph import GraphApi
from services.clients.nlp import NlpApi
from services.clients.rag import RagApi
from services.orchestrator.circuit_breaker import CircuitBreakers
from services.runtime.errors import DomainError

T = TypeVar("T")

# Codes that say the target is unwell (they count against its circuit).
_UNHEALTHY = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.DATA_LOSS,
    }
)
# Codes where the same call may succeed later: retried, then dead-lettered.
_TRANSIENT = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    }
)
_NOT_TRANSIENT_REASONS = frozenset({"BUDGET_EXCEEDED", "TEXT_TOO_LARGE", "TOO_LARGE", "TOKEN_BUDGET_EXCEEDED"})


def service_circuit(service: str) -> str:
    return f"service:{service}"


def provider_circuit(provider: str) -> str:
    return f"provider:{provider}"


def status_code(exc: BaseException) -> grpc.StatusCode | None:
    if isinstance(exc, DomainError):
        return exc.code
    if isinstance(exc, grpc.aio.AioRpcError):
        return exc.code()
    return None


def is_transient(exc: BaseException) -> bool:
    """Whether retrying the same operation later may succeed (retry, fallback, dead letter)."""
    code = status_code(exc)
    return code in _TRANSIENT and getattr(exc, "reason", "") not in _NOT_TRANSIENT_REASONS


def counts_against_circuit(exc: BaseException) -> bool:
    return status_code(exc) in _UNHEALTHY


class _Guarded:
    def __init__(self, client: Any, circuit: str, breakers: CircuitBreakers) -> None:
        self._client, self._circuit, self._breakers = client, circuit, breakers

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        if not inspect.iscoroutinefunction(method):
            # A server-streaming call returns its stream without being awaited: awaiting it in the
            # breaker would fail every such call (and count the TypeError as the peer's success).
            def guarded_stream(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
                return self._breakers.stream(self._circuit, lambda: method(*args, **kwargs), counts_against_circuit)

            return guarded_stream

        async def guarded(*args: Any, **kwargs: Any) -> Any:
            return await self._breakers.call(self._circuit, lambda: method(*args, **kwargs), counts_against_circuit)

        return guarded


def guarded(client: T, service: str, breakers: CircuitBreakers) -> T:
    """``client`` with every call run through ``service``'s circuit breaker."""
    return cast(T, _Guarded(client, service_circuit(service), breakers))


@dataclass(frozen=True)
class Peers:
    """The downstream services' typed clients, each behind its circuit breaker."""

    nlp: NlpApi
    rag: RagApi
    graph: GraphApi

    @classmethod
    def guarded(cls, nlp: NlpApi, rag: RagApi, graph: GraphApi, breakers: CircuitBreakers) -> Peers:
        return cls(guarded(nlp, "nlp", breakers), guarded(rag, "rag", breakers), guarded(graph, "graph", breakers))
