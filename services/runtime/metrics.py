"""Prometheus metrics of a mesh process: the RPC metrics every service shares, and its /metrics port.

The server and client interceptors (``services.runtime.interceptors``) record every RPC here, so no
service counts its own calls. Domain metrics live in ``services.runtime.domain_metrics``. Labels are
bounded: service, gRPC method (from the contracts), status code, provider/model, stage; never a
tenant, document or request id.
"""

from __future__ import annotations

import logging

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, start_http_server

log = logging.getLogger("docuthinker.metrics")

# Seconds: from a cached health check (~0.2 ms) to a long OCR upload (minutes).
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)

SERVER_STARTED = Counter(
    "docuthinker_rpc_server_started_total", "RPCs received by this service.", ["service", "method"]
)
SERVER_HANDLED = Counter(
    "docuthinker_rpc_server_handled_total", "RPCs completed by this service, by gRPC status code.",
    ["service", "method", "code"],
)
SERVER_LATENCY = Histogram(
    "docuthinker_rpc_server_duration_seconds", "Time from receiving an RPC to its last response message.",
    ["service", "method"], buckets=LATENCY_BUCKETS,
)
SERVER_IN_FLIGHT = Gauge(
    "docuthinker_rpc_server_in_flight", "RPCs being handled right now.", ["service"]
)
CLIENT_HANDLED = Counter(
    "docuthinker_rpc_client_handled_total", "Calls this process made to other services, by gRPC status code.",
    ["service", "method", "code"],
)
CLIENT_LATENCY = Histogram(
    "docuthinker_rpc_client_duration_seconds", "Latency of calls this process made to other services.",
    ["service", "method"], buckets=LATENCY_BUCKETS,
)
_process = {"service": "client"}


def set_process_service(name: str) -> None:
    """The name this process reports as the caller of its outgoing calls."""
    _process["service"] = name


def process_service() -> str:
    return _process["service"]


PROCESS_INFO = Gauge("docuthinker_service_info", "Constant 1, labelled with the service's name.", ["service"])


def method_label(full_method: str) -> str:
    """``/docuthinker.rag.v1.RagService/Search`` -> ``docuthinker.rag.v1.RagService/Search``."""
    return full_method.lstrip("/")


def start_metrics_server(service: str, host: str, port: int, registry: CollectorRegistry = REGISTRY) -> int:
    """Serves ``/metrics`` on ``host:port`` (0: a free port) in a daemon thread; returns the bound port."""
    try:
        server, _thread = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise RuntimeError(f"{service}: cannot serve metrics on {host}:{port} ({exc}); set "
                           f"DOCUTHINKER_{service.upper()}_METRICS_PORT or DOCUTHINKER_METRICS_ENABLED=false") from exc
    bound = server.server_address[1]
    PROCESS_INFO.labels(service).set(1)
    log.info("metrics", extra={"fields": {"address": f"http://{host}:{bound}/metrics"}})
    return bound
