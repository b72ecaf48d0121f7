"""Renders Envoy's configuration for the mesh from the contracts and the mesh settings.

Routes are derived from the descriptor set (``make proto`` writes gateway/docuthinker.pb), so
a new RPC needs no hand-written route: streams get an unbounded timeout, unary calls a
bounded one, and only the unary calls whose contract declares ``idempotency_level =
NO_SIDE_EFFECTS`` are retried by Envoy (``services.runtime.contracts``, the rule the mesh
channels follow too); an RPC declared ``VISIBILITY_INTERNAL`` in its proto gets no route at
all (404). With auth on (the default), bearer tokens are verified first and the tenant and
role are taken from them (``gateway/auth.py``); every forwarded request carries the mesh
credential (``gateway/mesh_credentials.py``).

    python -m gateway.envoy_config --out gateway/envoy.yaml   # render with the current env
"""

from __future__ import annotations

import argparse
import pathlib
from dataclasses import dataclass
from typing import Any

import yaml
from docuthinker.api.v1 import visibility_pb2
from google.api import annotations_pb2
from google.protobuf import descriptor_pb2

from gateway import auth as edge_auth
from gateway import edge_policy, http_apps, mesh_credentials, request_validation, static_site, upstreams
from gateway.auth import AuthSettings
from gateway.edge_policy import EdgeSettings
from services.runtime import mesh_auth
from services.runtime.config import SERVICE_NAMES, MeshSettings
from services.runtime.contracts import RpcMethod, methods_of

GATEWAY_DIR = pathlib.Path(__file__).resolve().parent
DESCRIPTOR_SET = GATEWAY_DIR / "docuthinker.pb"
UNARY_TIMEOUT_S = 120
TRANSCODER = "envoy.filters.http.grpc_json_transcoder"
HEADER_MUTATION = "envoy.filters.http.header_mutation"

# Calls answering with a user's uploaded bytes (HTML, SVG ...) on the web app's origin: a browser
# opening one directly gets them sandboxed (no scripts, no access to the app's stored token).
UNTRUSTED_BYTES = frozenset({"GetDocumentContent", "GetDocumentVersionContent"})
UNTRUSTED_BYTES_HEADERS = {
    "content-security-policy": "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'",
    "x-content-type-options": "nosniff",
}


@dataclass(frozen=True)
class Method:
    service: str  # fully qualified, e.g. docuthinker.rag.v1.RagService
    name: str
    server_streaming: bool
    client_streaming: bool
    http_get: bool
    contract: RpcMethod
    internal: bool = False
    """Declared ``(docuthinker.api.v1.visibility) = VISIBILITY_INTERNAL``: only services call it, the gateway never routes it."""

    @property
    def grpc_path(self) -> str:
        return f"/{self.service}/{self.name}"

    @property
    def streaming(self) -> bool:
        return self.server_streaming or self.client_streaming

    @property
    def idempotent(self) -> bool:
        return not self.streaming and self.contract.retry_safe


def load_methods(descriptor_set: pathlib.Path = DESCRIPTOR_SET) -> dict[str, list[Method]]:
    """Methods of each mesh service, keyed by short service name (rag, nlp, ...)."""
    fds = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes())
    methods: dict[str, list[Method]] = {}
    for contract in methods_of(fds.file):
        short = contract.service.split(".")[1]
        rule = contract.options.Extensions[annotations_pb2.http]
        internal = contract.options.Extensions[visibility_pb2.visibility] == visibility_pb2.VISIBILITY_INTERNAL
        methods.setdefault(short, []).append(
            Method(contract.service, contract.name, contract.server_streaming, contract.client_streaming,
                   bool(rule.get), contract, internal)
        )
    return methods


def _routes(service: str, methods: list[Method]) -> list[dict]:
    routes = []
    for method in methods:
        if method.internal:
            continue  # no route: REST and gRPC callers of the gateway get its 404
        route: dict = {"cluster": service}
        if method.streaming:
            route["timeout"] = "0s"
            route["idle_timeout"] = "300s"
            route["max_stream_duration"] = {"grpc_timeout_header_max": "0s"}
        else:
            route["timeout"] = f"{UNARY_TIMEOUT_S}s"
            route["max_stream_duration"] = {"grpc_timeout_header_max": f"{UNARY_TIMEOUT_S}s"}
            if method.idempotent:
                route["retry_policy"] = {
                    "retry_on": "connect-failure,refused-stream,unavailable,reset",
                    "num_retries": 2,
                    "per_try_timeout": f"{UNARY_TIMEOUT_S // 3}s",
                    "retry_back_off": {"base_interval": "0.1s", "max_interval": "1s"},
                    # A retry goes to another replica than the one that just failed, when there is one.
                    "retry_host_predicate": [{"name": "envoy.retry_host_predicates.previous_hosts", "typed_config": {
                        "@type": "type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate"}}],
                    "host_selection_retry_max_attempts": 3,
                }
        entry = {"match": {"path": method.grpc_path}, "route": route, "name": method.grpc_path}
        if method.name in UNTRUSTED_BYTES:
            entry["response_headers_to_add"] = [
                {"header": {"key": k, "value": v}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}
                for k, v in UNTRUSTED_BYTES_HEADERS.items()
            ]
        routes.append(entry)
    return routes


def _cluster(service: str, settings: MeshSettings, health_service: str) -> dict:
    # Every replica of the service (its target setting), each health-checked and ejected on its own. HTTP/2
    # PINGs to each, as services ping each other (services/runtime/keepalive.py): a paused service's
    # connection is closed within seconds and its in-flight requests end (503) instead of hanging.
    keepalive = {"interval": f"{settings.peer_keepalive_s}s", "timeout": f"{settings.peer_keepalive_timeout_s}s"}
    return upstreams.cluster(service, settings.peer_of(service), {"grpc_health_check": {"service_name": health_service}},
                             keepalive=keepalive)


def render(settings: MeshSettings, descriptor_set: pathlib.Path = DESCRIPTOR_SET,
           auth: AuthSettings | None = None, edge: EdgeSettings | None = None) -> dict:
    """Envoy's bootstrap; with ``auth`` enabled, bearer tokens are verified ahead of the transcoder."""
    edge = edge or EdgeSettings()
    rate_limit = edge_policy.rate_limit_filter(edge)
    methods = load_methods(descriptor_set)
    full_names = {short: ms[0].service for short, ms in methods.items()}
    routes = [*http_apps.routes(), *(r for service in SERVICE_NAMES for r in _routes(service, methods[service]))]
    edge_filters = edge_auth.http_filters(auth) if auth is not None and auth.enabled else []
    # The web app at / (web/): exact-path routes answered by Envoy itself, ahead of the RPC routes.
    web_routes = static_site.routes([TRANSCODER, *(f["name"] for f in edge_filters if f["name"] != HEADER_MUTATION)])
    transcoder = {
        "name": TRANSCODER,
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder",
            "proto_descriptor": str(descriptor_set),
            "services": [full_names[s] for s in SERVICE_NAMES],
            "convert_grpc_status": True,
            "print_options": {
                "add_whitespace": False,
                "always_print_primitive_fields": True,
                "preserve_proto_field_names": True,
                "stream_sse_style_delimited": True,
            },
            "request_validation_options": {
                "reject_unknown_method": True,
                "reject_unknown_query_parameters": True,
            },
            # JSON requests are small; raw uploads are bounded by the upload limit.
            "max_request_body_size": settings.max_upload_bytes,
            "max_response_body_size": 64 * 1024 * 1024,
        },
    }
    listener = {
        "name": "public",
        "address": {"socket_address": {"address": settings.host, "port_value": settings.gateway_port}},
        "filter_chains": [
            {
                "filters": [
                    {
                        "name": "envoy.filters.network.http_connection_manager",
                        "typed_config": {
                            "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                            "stat_prefix": "ingress",
                            "codec_type": "AUTO",
                            "stream_idle_timeout": "300s",
                            **edge_policy.connection_manager_options(edge),
                            "access_log": [
                                {
                                    "name": "envoy.access_loggers.stdout",
                                    "typed_config": {
                                        "@type": "type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog",
                                        "log_format": {"json_format": ACCESS_LOG_FORMAT},
                                    },
                                }
                            ],
                            **_tracing(settings),
                            "local_reply_config": {
                                "mappers": [
                                    *(edge_auth.local_reply_mappers() if auth is not None and auth.enabled else []),
                                    *edge_policy.local_reply_mappers(),
                                ]
                            },
                            "route_config": {
                                "name": "docuthinker",
                                "virtual_hosts": [
                                    {"name": "docuthinker", "domains": ["*"], "routes": [*web_routes, *routes],
                                     **mesh_credentials.virtual_host_options(settings, auth)}
                                ],
                                "max_direct_response_body_size_bytes": static_site.MAX_FILE_BYTES,
                            },
                            "http_filters": [
                                *edge_filters,
                                *([rate_limit] if rate_limit is not None else []),  # after auth: tenant from the token
                                # strict JSON, before the transcoder drops unknown fields
                                request_validation.lua_filter(http_apps.OPENAI_API, descriptor_set,
                                                              mesh_auth.read_credential(settings.mesh_credential_file)),
                                transcoder,
                                {
                                    "name": "envoy.filters.http.router",
                                    "typed_config": {
                                        "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
                                    },
                                },
                            ],
                        },
                    }
                ]
            }
        ],
    }
    clusters = [*(_cluster(s, settings, full_names[s]) for s in SERVICE_NAMES), *http_apps.clusters(settings)]
    bootstrap = {
        "admin": {
            "address": {"socket_address": {"address": "127.0.0.1", "port_value": settings.gateway_admin_port}},
            "ignore_global_conn_limit": True,
        },
        "overload_manager": edge_policy.overload_manager(edge),
        "static_resources": {"listeners": [listener], "clusters": clusters},
    }
    if settings.gateway_stats_port:
        bootstrap["static_resources"]["listeners"].append(_stats_listener(settings))
        clusters.append(_static_cluster(ADMIN_CLUSTER, "127.0.0.1", settings.gateway_admin_port, http2=False))
    if settings.otlp_endpoint:
        clusters.append(_collector_cluster(settings.otlp_endpoint))
        # Export spans every half second (Envoy's default is 5 s), so a trace is complete soon after its request.
        bootstrap["layered_runtime"] = {"layers": [{"name": "tracing", "static_layer": {
            "tracing.opentelemetry.flush_interval_ms": 500, "tracing.opentelemetry.min_flush_spans": 1}}]}
    return bootstrap


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


def _tracing(settings: MeshSettings) -> dict:
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


def _collector_cluster(endpoint: str) -> dict:
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


def _stats_listener(settings: MeshSettings) -> dict:
    """Only GET /stats/prometheus of the admin interface, on the service interface (the admin stays local)."""
    return {
        "name": "stats",
        "address": {"socket_address": {"address": settings.host, "port_value": settings.gateway_stats_port}},
        "ignore_global_conn_limit": True,  # scrapes must get through when clients hold every connection
        "filter_chains": [{"filters": [{
            "name": "envoy.filters.network.http_connection_manager",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                "stat_prefix": "stats",
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


def write(path: pathlib.Path, settings: MeshSettings, auth: AuthSettings | None = None,
          edge: EdgeSettings | None = None) -> pathlib.Path:
    # 0600: the config holds the mesh credential (gateway/mesh_credentials.py).
    return edge_auth.write_private(path, yaml.safe_dump(render(settings, auth=auth, edge=edge), sort_keys=False))


def main() -> None:
    parser = argparse.ArgumentParser(description="Render Envoy's config for the DocuThinker mesh.")
    parser.add_argument("--out", type=pathlib.Path, default=GATEWAY_DIR / "envoy.yaml")
    args = parser.parse_args()
    settings = MeshSettings()
    print(write(args.out, settings, edge_auth.local_issuer(AuthSettings(), settings.data_dir), EdgeSettings()))


if __name__ == "__main__":
    main()
