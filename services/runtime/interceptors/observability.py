"""Observability: the mesh's RPC metrics (``services.runtime.metrics``), a span per RPC that continues the
caller's trace when tracing is on (``services.runtime.tracing``), and one log line per incoming RPC,
however it ended (a client that went away mid-stream: CANCELLED)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import grpc
from opentelemetry import trace

from services.runtime import metrics, tracing
from services.runtime.errors import DomainError
from services.runtime.interceptors.client import OutgoingCall
from services.runtime.interceptors.server import Inbound, Messages, ServerCall

log = logging.getLogger("docuthinker.rpc")

_Span = tuple[trace.Span, Any] | None


class ServerObservability(Inbound):
    def __init__(self, inner: Inbound, service: str, record_metrics: bool = True) -> None:
        super().__init__(inner)
        self._service = service
        self._metrics = record_metrics
        self._in_flight = metrics.SERVER_IN_FLIGHT.labels(service)

    async def unary(self, call: ServerCall, request: Any) -> Any:
        span = self._begin(call)
        try:
            result = await self.inner.unary(call, request)
        except BaseException as exc:
            _ended_by(call, exc)
            raise
        finally:
            self._end(call, span)
        return result

    async def stream(self, call: ServerCall, request: Any) -> Messages:
        span = self._begin(call)
        try:
            async with contextlib.aclosing(self.inner.stream(call, request)) as messages:
                async for message in messages:
                    yield message
        except BaseException as exc:
            _ended_by(call, exc)
            raise
        finally:
            self._end(call, span)

    def _begin(self, call: ServerCall) -> _Span:
        if self._metrics:
            metrics.SERVER_STARTED.labels(self._service, metrics.method_label(call.method)).inc()
            self._in_flight.inc()
        return tracing.start_server_span(call.method, call.headers) if tracing.enabled() else None

    def _end(self, call: ServerCall, span: _Span) -> None:
        """Exactly once per RPC, however it ended."""
        code = call.code or "OK"
        elapsed = time.perf_counter() - call.started
        if self._metrics:
            self._in_flight.dec()
            label = metrics.method_label(call.method)
            metrics.SERVER_HANDLED.labels(self._service, label, code).inc()
            metrics.SERVER_LATENCY.labels(self._service, label).observe(elapsed)
        self._log(call, code, elapsed)
        if span is not None:
            tracing.end_server_span(span[0], span[1], code)

    def _log(self, call: ServerCall, code: str, elapsed: float) -> None:
        ctx = call.request_context
        fields: dict[str, object] = {
            "service": self._service,
            "method": call.method,
            "code": code,
            "duration_ms": round(elapsed * 1000, 2),
            "request_id": ctx.request_id if ctx else None,
            "tenant": ctx.tenant if ctx else None,
        }
        if call.server_streaming:
            fields["sent"] = call.sent
        if code == "CANCELLED":
            # The caller went away (a closed connection, its own deadline or cancel): one line, as for any end.
            log.info("rpc cancelled by the client", extra={"fields": fields})
        elif call.error is not None and not isinstance(call.error, DomainError):
            log.error("rpc failed", extra={"fields": fields}, exc_info=call.error)
        else:
            log.info("rpc", extra={"fields": fields})


def _ended_by(call: ServerCall, exc: BaseException) -> None:
    """Notes how a call that raised ended, unless a concern inside already said."""
    if isinstance(exc, asyncio.CancelledError | GeneratorExit):
        call.code = "CANCELLED"
    elif isinstance(exc, grpc.aio.AbortError):
        call.code = call.code or "ABORTED_BY_HANDLER"  # the error mapping notes the code of the aborts it makes
    elif call.code is None:  # an error no concern mapped (a chain without ``ErrorMapping``)
        call.code, call.error = "INTERNAL", exc


class ClientObservability:
    """Records each outgoing call's metrics (and span, whose headers it adds) when the call completes."""

    def __init__(self, record_metrics: bool = True) -> None:
        self._metrics = record_metrics

    def begin(self, call: OutgoingCall) -> Callable[[grpc.StatusCode], None] | None:
        span = None
        if tracing.enabled():
            span, headers = tracing.start_client_span(call.method)
            for key, value in headers.items():
                call.metadata[key] = value
        if not self._metrics and span is None:
            return None
        method, started, record_metrics = call.method, time.perf_counter(), self._metrics

        def done(code: grpc.StatusCode) -> None:
            if record_metrics:
                label = metrics.method_label(method)
                metrics.CLIENT_HANDLED.labels(metrics.process_service(), label, code.name).inc()
                metrics.CLIENT_LATENCY.labels(metrics.process_service(), label).observe(time.perf_counter() - started)
            if span is not None:
                tracing.end_client_span(span, code.name)

        return done
