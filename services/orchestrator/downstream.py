"""Calls to the other services of the mesh, each through that service's circuit breaker.

A downstream failure comes back as a ``RemoteError``: a domain error that keeps the remote
``google.rpc.Status`` (code, reason, field violations), so a caller's mistake reported by the
NLP service reaches the orchestrator's caller unchanged. Which failures open a circuit, and
which are worth a retry or a dead letter, is decided here, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from docuthinker.graph.v1 import graph_service_pb2_grpc
from docuthinker.nlp.v1 import nlp_service_pb2_grpc
from docuthinker.rag.v1 import rag_service_pb2_grpc
from services.orchestrator.circuit_breaker import CircuitBreakers
from services.runtime.errors import DomainError

STUBS = {
    "nlp": nlp_service_pb2_grpc.NlpServiceStub,
    "rag": rag_service_pb2_grpc.RagServiceStub,
    "graph": graph_service_pb2_grpc.GraphServiceStub,
}

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


class RemoteError(DomainError):
    """A failure reported by another service, with its status kept intact."""

    def __init__(self, service: str, status: status_pb2.Status) -> None:
        code = _code(status.code)
        reason = code.name
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                reason = info.reason or reason
        super().__init__(f"{service}: {status.message or code.name}", reason=reason, code=code)
        self.service = service
        self._status = status

    def to_status_proto(self) -> status_pb2.Status:
        status = status_pb2.Status()
        status.CopyFrom(self._status)
        status.message = self.message
        return status


def remote_error(exc: grpc.aio.AioRpcError, service: str) -> RemoteError:
    status = None
    try:
        status = rpc_status.from_call(exc)
    except ValueError:
        status = None
    if status is None:
        status = status_pb2.Status(code=exc.code().value[0], message=exc.details() or "")
    return RemoteError(service, status)


def _code(value: int) -> grpc.StatusCode:
    for code in grpc.StatusCode:
        if code.value[0] == value:
            return code
    return grpc.StatusCode.UNKNOWN


class MeshClient:
    """Typed access to the downstream services, guarded by their circuit breakers."""

    def __init__(self, channels: Mapping[str, grpc.aio.Channel], breakers: CircuitBreakers) -> None:
        self._channels = channels
        self._breakers = breakers

    def _stub(self, service: str) -> Any:
        return STUBS[service](self._channels[service])

    async def call(self, service: str, method: str, request: Any) -> Any:
        """A unary call (or a client-streaming one when ``request`` is an async iterable)."""

        async def attempt() -> Any:
            try:
                return await getattr(self._stub(service), method)(request)
            except grpc.aio.AioRpcError as exc:
                raise remote_error(exc, f"{service}.{method}") from None

        return await self._breakers.call(service_circuit(service), attempt, counts_against_circuit)
