"""Envoy's own telemetry and its admin interface: the access log, tracing to an OTLP collector, and the stats
listener that exposes only ``/stats/prometheus`` of the admin interface kept on a private unix socket.

Separate from the bootstrap (``envoy_config``) because none of it depends on the mesh's RPCs or its edge policy: it
is what operators read (logs, traces, metrics) and where the launcher finds Envoy's admin socket.
"""

from __future__ import annotations

import pathlib
from typing import Any

from services.runtime.config import MeshSettings

# One JSON line per request on Envoy's stdout (its log file under `make run`), with the trace id.
ACCESS_LOG_FORMAT = {
    "ts": "%START_TIME%",
    "method": "%REQ(:METHOD)%",
    "path": "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%",
    "status": "%RESPONSE_CODE%",
    "grpc_status": "%GRPC_STATUS%",
    "flags": "%RESPONSE_FLAGS%",
    "duration_ms": "%DURATION%",
    "bytes_in": "%BYTES_RECEIVED%",
    "bytes_out": "%BYTES_SENT%",
    "upstream": "%UPSTREAM_CLUSTER%",
    "request_id": "%REQ(X-REQUEST-ID)%",
    "trace_id": "%TRACE_ID%",
}
COLLECTOR_CLUSTER = "otlp_collector"


def tracing(settings: MeshSettings) -> dict:
    """Envoy starts each trace (OpenTelemetry tracer, OTLP/gRPC export) when a collector is configured;
    the ``traceparent`` it sends upstream makes every service's spans part of it."""
    if not settings.otlp_endpoint:
        return {}
    return {
        "tracing": {
            "random_sampling": {"value": settings.trace_sample_ratio * 100},
            "spawn_upstream_span": False,
            "provider": {
                "name": "envoy.tracers.opentelemetry",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig",
                    "grpc_service": {"envoy_grpc": {"cluster_name": COLLECTOR_CLUSTER}, "timeout": "2s"},
                    "service_name": "gateway",
                },
            },
        }
    }


def collector_cluster(endpoint: str) -> dict:
    host, _, port = endpoint.split("://", 1)[-1].rstrip("/").rpartition(":")
    return _static_cluster(COLLECTOR_CLUSTER, host, int(port), http2=True)


def _static_cluster(name: str, host: str, port: int, http2: bool) -> dict:
    cluster: dict[str, Any] = {
        "name": name,
        "type": "STATIC" if host.replace(".", "").isdigit() else "STRICT_DNS",
        "connect_timeout": "1s",
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [{"lb_endpoints": [
                {"endpoint": {"address": {"socket_address": {"address": host, "port_value": port}}}}
            ]}],
        },
    }
    if http2:
        cluster["typed_extension_protocol_options"] = {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": {"http2_protocol_options": {}},
            }
        }
    return cluster


ADMIN_CLUSTER = "envoy_admin"
ADMIN_SOCKET_MODE = 0o600
ADMIN_SOCKET_MAX_CHARS = 100
"""A unix socket's path must fit ``sun_path`` (108 bytes on Linux, with its terminating NUL)."""


def admin_socket(settings: MeshSettings) -> pathlib.Path:
    """Where Envoy's admin interface listens: ``gateway_admin_socket``, or ``<data_dir>/run/gateway-admin.sock``."""
    path = settings.gateway_admin_socket or pathlib.Path(settings.data_dir) / "run" / "gateway-admin.sock"
    path = path if path.is_absolute() else pathlib.Path.cwd() / path
    if len(str(path)) > ADMIN_SOCKET_MAX_CHARS:
        raise ValueError(f"Envoy's admin socket path {path} is longer than {ADMIN_SOCKET_MAX_CHARS} characters (a unix"
                         " socket's limit): set DOCUTHINKER_GATEWAY_ADMIN_SOCKET to a shorter one")
    return path


def admin_cluster(settings: MeshSettings) -> dict:
    """The stats listener's way to the admin interface: its unix socket."""
    return {
        "name": ADMIN_CLUSTER,
        "type": "STATIC",
        "connect_timeout": "1s",
        "load_assignment": {"cluster_name": ADMIN_CLUSTER, "endpoints": [{"lb_endpoints": [
            {"endpoint": {"address": {"pipe": {"path": str(admin_socket(settings))}}}}]}]},
    }


def stats_listener(settings: MeshSettings) -> dict:
    """Only GET /stats/prometheus of the admin interface, on the service interface (the admin stays on its socket)."""
    return {
        "name": "stats",
        "address": {"socket_address": {"address": settings.host, "port_value": settings.gateway_stats_port}},
        "ignore_global_conn_limit": True,  # scrapes must get through when clients hold every connection
        "filter_chains": [{"filters": [{
            "name": "envoy.filters.network.http_connection_manager",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                "stat_prefix": "stats",
                "server_header_transformation": "PASS_THROUGH",
                "route_config": {"name": "stats", "virtual_hosts": [{"name": "stats", "domains": ["*"], "routes": [
                    {"match": {"path": "/stats/prometheus", "headers": [
                        {"name": ":method", "string_match": {"exact": "GET"}}]},
                     "route": {"cluster": ADMIN_CLUSTER}},
                ]}]},
                "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}],
            },
        }]}],
    }

