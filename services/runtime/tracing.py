"""OpenTelemetry tracing of a mesh process: off unless ``DOCUTHINKER_OTLP_ENDPOINT`` names a collector.

Envoy starts each trace (its OpenTelemetry tracer) and passes a W3C ``traceparent`` to the first
service; the server interceptor continues it, the client interceptor passes it on, so one REST call
is one trace across every service it reaches. Background work carries the context with it (the graph
outbox stores it) and continues the trace later. Stages of domain work are spans from ``stage``
(or ``record_span`` for a stage timed already). With tracing off every function here is a cheap
no-op: the tracer is OpenTelemetry's no-op tracer and the interceptors skip spans entirely.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator, Mapping, MutableMapping
from contextvars import Token
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

log = logging.getLogger("docuthinker.tracing")

_PROPAGATOR = TraceContextTextMapPropagator()
_NOOP = trace.NoOpTracer()
_tracer: trace.Tracer = _NOOP
_provider = None  # the SDK's TracerProvider once configured


def enabled() -> bool:
    return _provider is not None


def tracer() -> trace.Tracer:
    return _tracer


def configure(service: str, endpoint: str, sample_ratio: float = 1.0, export_delay_ms: int = 500) -> bool:
    """Exports this process's spans over OTLP/gRPC to ``endpoint`` (``host:port``); False when empty.

    Sampling follows the caller's decision (Envoy samples at the edge); traces that start here
    (background work with no stored context) are sampled at ``sample_ratio``.
    """
    global _tracer, _provider
    if not endpoint:
        return False
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    # The launcher sets OTEL_SDK_DISABLED to silence third-party libraries' telemetry; an endpoint
    # configured for DocuThinker is an explicit opt-in for this provider (which is not the global one).
    saved = os.environ.pop("OTEL_SDK_DISABLED", None)
    try:
        provider = TracerProvider(
            sampler=ParentBased(TraceIdRatioBased(sample_ratio)),
            resource=Resource.create({"service.name": service, "service.namespace": "docuthinker"}),
            shutdown_on_exit=False,
        )
    finally:
        if saved is not None:
            os.environ["OTEL_SDK_DISABLED"] = saved
    target = endpoint.split("://", 1)[-1]
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=target, insecure=True), schedule_delay_millis=export_delay_ms)
    )
    _provider = provider
    _tracer = provider.get_tracer("docuthinker")
    log.info("tracing", extra={"fields": {"otlp_endpoint": target, "sample_ratio": sample_ratio}})
    return True


def shutdown() -> None:
    """Flushes and stops the exporter (graceful shutdown)."""
    global _tracer, _provider
    if _provider is not None:
        _provider.shutdown()
    _provider, _tracer = None, _NOOP


# -- propagation -----------------------------------------------------------------------
def extract(headers: Mapping[str, str]) -> otel_context.Context:
    """The caller's context from W3C ``traceparent`` / ``tracestate`` headers (or metadata)."""
    return _PROPAGATOR.extract(headers)


def inject(carrier: MutableMapping[str, str], ctx: otel_context.Context | None = None) -> None:
    _PROPAGATOR.inject(carrier, context=ctx)


def current_traceparent() -> str | None:
    """The current span as a ``traceparent`` value, to store with background work (None: no trace)."""
    if not enabled():
        return None
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier.get("traceparent")


def current_trace_id() -> str | None:
    """Hex trace id of the current span, when there is a sampled trace."""
    span_context = trace.get_current_span().get_span_context()
    if not span_context.is_valid:
        return None
    return format(span_context.trace_id, "032x")


# -- spans -------------------------------------------------------------------------------
@contextlib.contextmanager
def stage(name: str, **attributes: object) -> Iterator[trace.Span]:
    """A span for one stage of domain work (a child of the current span)."""
    if not enabled():
        yield trace.INVALID_SPAN
        return
    with _tracer.start_as_current_span(name, attributes=_clean(attributes)) as span:
        yield span


def record_span(name: str, started_perf: float, ended_perf: float | None = None, /, **attributes: object) -> None:
    """A span for a stage already timed with ``time.perf_counter()`` (child of the current span)."""
    if not enabled():
        return
    now_perf, now_ns = time.perf_counter(), time.time_ns()
    ended_perf = now_perf if ended_perf is None else ended_perf
    start_ns = now_ns - int((now_perf - started_perf) * 1e9)
    end_ns = now_ns - int((now_perf - ended_perf) * 1e9)
    span = _tracer.start_span(name, start_time=start_ns, attributes=_clean(attributes))
    span.end(end_time=end_ns)


@contextlib.contextmanager
def background(name: str, traceparent: str | None, **attributes: object) -> Iterator[trace.Span]:
    """A span for background work caused by an earlier request: it continues that request's trace
    (``traceparent`` stored with the work) and links to it; without one it starts a new trace."""
    if not enabled():
        yield trace.INVALID_SPAN
        return
    parent = extract({"traceparent": traceparent}) if traceparent else otel_context.Context()
    origin = trace.get_current_span(parent).get_span_context()
    links = [Link(origin, {"docuthinker.link": "caused_by"})] if origin.is_valid else []
    with _tracer.start_as_current_span(
        name, context=parent, kind=SpanKind.CONSUMER, links=links, attributes=_clean(attributes)
    ) as span:
        yield span


def start_server_span(method: str, headers: Mapping[str, str]) -> tuple[trace.Span, Token[otel_context.Context]]:
    """Starts and makes current the span of an incoming RPC; returns (span, token to detach)."""
    service, _, name = method.lstrip("/").rpartition("/")
    span = _tracer.start_span(
        method.lstrip("/"), context=extract(headers), kind=SpanKind.SERVER,
        attributes={"rpc.system": "grpc", "rpc.service": service, "rpc.method": name},
    )
    token = otel_context.attach(trace.set_span_in_context(span))
    return span, token


def end_server_span(span: trace.Span, token: Token[otel_context.Context], code: str) -> None:
    span.set_attribute("rpc.grpc.status_code", code)
    if code not in ("OK", "ABORTED_BY_HANDLER"):
        span.set_status(Status(StatusCode.ERROR, code))
    span.end()
    otel_context.detach(token)


def start_client_span(method: str) -> tuple[trace.Span, dict[str, str]]:
    """Starts the span of an outgoing call; returns it and the headers that carry it on."""
    service, _, name = method.lstrip("/").rpartition("/")
    span = _tracer.start_span(
        method.lstrip("/"), kind=SpanKind.CLIENT,
        attributes={"rpc.system": "grpc", "rpc.service": service, "rpc.method": name},
    )
    carrier: dict[str, str] = {}
    inject(carrier, trace.set_span_in_context(span))
    return span, carrier


def end_client_span(span: trace.Span, code: str) -> None:
    span.set_attribute("rpc.grpc.status_code", code)
    if code != "OK":
        span.set_status(Status(StatusCode.ERROR, code))
    span.end()


def _clean(attributes: Mapping[str, object]) -> dict[str, Any]:
    return {k: v for k, v in attributes.items() if v is not None}
