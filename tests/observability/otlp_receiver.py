"""An OTLP/gRPC trace receiver for tests: a real gRPC server implementing the collector's
``TraceService`` (stubs from ``opentelemetry-proto``) that keeps every span it is sent."""

from __future__ import annotations

import threading
import time
from concurrent import futures
from dataclasses import dataclass, field

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc


@dataclass(frozen=True)
class Span:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    attributes: dict
    links: tuple[tuple[str, str], ...]
    status_code: int


def _value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


@dataclass
class OtlpReceiver(trace_service_pb2_grpc.TraceServiceServicer):
    spans: list[Span] = field(default_factory=list)
    port: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: grpc.Server | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def Export(self, request, context):
        received = []
        for resource_spans in request.resource_spans:
            attrs = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            service = str(attrs.get("service.name", ""))
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    received.append(Span(
                        service=service, name=s.name, trace_id=s.trace_id.hex(), span_id=s.span_id.hex(),
                        parent_span_id=s.parent_span_id.hex(), kind=s.kind,
                        attributes={a.key: _value(a.value) for a in s.attributes},
                        links=tuple((link.trace_id.hex(), link.span_id.hex()) for link in s.links),
                        status_code=s.status.code,
                    ))
        with self._lock:
            self.spans.extend(received)
        return trace_service_pb2.ExportTraceServiceResponse()

    def start(self) -> OtlpReceiver:
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(self, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(0)

    def trace(self, trace_id: str) -> list[Span]:
        with self._lock:
            return [s for s in self.spans if s.trace_id == trace_id]

    def wait_for(self, predicate, timeout_s: float = 30.0) -> list[Span]:
        """Polls until ``predicate(all spans)`` is truthy; returns the spans then (or fails)."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                snapshot = list(self.spans)
            if predicate(snapshot):
                return snapshot
            if time.monotonic() > deadline:
                names = sorted({(s.service, s.name) for s in snapshot})
                raise AssertionError(f"spans not received within {timeout_s}s; have {len(snapshot)}: {names[:60]}")
            time.sleep(0.2)
