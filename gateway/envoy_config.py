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
from services.runtime import gateway_reflection
from services.runtime.config import SERVICE_NAMES, MeshSettings
from services.runtime.contracts import RpcMethod, methods_of

GATEWAY_DIR = pathlib.Path(__file__).resolve().parent
DESCRIPTOR_SET = GATEWAY_DIR / "docuthinker.pb"
UNARY_TIMEOUT_S = 120
TRANSCODER = "envoy.filters.http.grpc_json_transcoder"
HEADER_MUTATION = "envoy.filters.http.header_mutation"

# Calls answering with a user's uploaded bytes (HTML, SVG ...) on the web app's origin: a browser
# opening one directly gets them sandboxed (no scripts, no access to the app's stored token).
UNTRUSTED_BYTES = frozenset({"GetDocumentContent", "GetDocumentPreview", "GetDocumentVersionContent"})
HIDDEN_RESPONSE_HEADERS = ("server", "x-powered-by", "x-envoy-upstream-service-time")
"""Response headers that would name the software behind the gateway (an upstream's aiohttp says its version)."""
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


RETRY_ON_ONE_REPLICA = "connect-failure,refused-stream,unavailable"
"""What a lone replica's idempotent call is retried on: its connection was refused, or it said UNAVAILABLE. Not a
reset of a request it had: a replica that dies under it is gone (a retry would find it refusing), and one that is
paused or hung is cut off by keepalive after ``peer_keepalive_s`` + ``peer_keepalive_timeout_s`` (about 5 s),
after which a retry would wait out a second keepalive on a new connection to the same stopped process (measured:
about 9 s in all, where the README promises 5)."""
RETRY_ON_REPLICAS = f"{RETRY_ON_ONE_REPLICA},reset"
"""Several replicas: a call reset under it is retried on another one (the previous-hosts predicate)."""


def _routes(service: str, methods: list[Method], replicated: bool) -> list[dict]:
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
                    "retry_on": RETRY_ON_REPLICAS if replicated else RETRY_ON_ONE_REPLICA,
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


def _reflection_routes() -> list[dict]:
    """grpcurl at the gateway without -protoset: server reflection goes to the orchestrator, marked as coming
    through the gateway, and it describes every public service (``services/runtime/gateway_reflection.py``)."""
    return [{"match": {"prefix": prefix}, "name": prefix,
             "route": {"cluster": "orchestrator", "timeout": "0s", "idle_timeout": "60s"},
             "request_headers_to_add": [{"header": {"key": gateway_reflection.GATEWAY_HEADER, "value": "1"},
                                         "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}]}
            for prefix in gateway_reflection.METHOD_PREFIXES]


def _replicated(settings: MeshSettings, service: str) -> bool:
    """Whether Envoy may find more than one replica of ``service`` (a list of them, or a DNS name)."""
    peer = settings.peer_of(service)
    return peer.dns or len(peer.endpoints) > 1 or not all(upstreams.is_literal(host) for host, _ in peer.endpoints)


def _cluster(service: str, settings: MeshSettings, health_service: str) -> dict:
    # Every replica of the service (its target setting), each health-checked and ejected on its own. HTTP/2
    # PINGs to each, as services ping each other (services/runtime/keepalive.py): a paused service's
    # connection is closed within seconds and its in-flight requests end (503) instead of hanging.
    keepalive = {"interval": f"{settings.peer_keepalive_s}s", "timeout": f"{settings.peer_keepalive_timeout_s}s"}
    return upstreams.cluster(service, settings.peer_of(service), {"grpc_health_check": {"service_name": health_service}},
                             keepalive=keepalive, upstream_filters=mesh_credentials.upstream_filters(settings))


def render(settings: MeshSettings, descriptor_set: pathlib.Path = DESCRIPTOR_SET,
           auth: AuthSettings | None = None, edge: EdgeSettings | None = None) -> dict:
    """Envoy's bootstrap; with ``auth`` enabled, bearer tokens are verified ahead of the transcoder."""
    edge = edge or EdgeSettings()
    methods = load_methods(descriptor_set)
    full_names = {short: ms[0].service for short, ms in methods.items()}
    routes = [*http_apps.routes(), *(r for service in SERVICE_NAMES
                                     for r in _routes(service, methods[service], _replicated(settings, service))),
              *_reflection_routes()]
    edge_filters = edge_auth.http_filters(auth) if auth is not None and auth.enabled else []
    client_limit = edge_policy.client_rate_limit_filter(edge, tokens_required=bool(edge_filters))
    tenant_limit = edge_policy.tenant_rate_limit_filter(edge)
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
            # What the transcoder may hold of one request: a JSON body (raw uploads pass through it in pieces of
            # at most 1 MiB, streamed on to rag, and rag counts them against the upload limit). Also the stream's
            # buffer limit, so it must stay small: an upload held by a slow upstream buffers up to it in Envoy.
            "max_request_body_size": request_validation.MAX_JSON_BYTES,
            "max_response_body_size": 64 * 1024 * 1024,
        },
    }
    listener = {
        "name": "public",
        "address": {"socket_address": {"address": settings.host, "port_value": settings.gateway_port}},
        # What Envoy reads ahead of a request per connection: the largest JSON body (the strict-JSON check reads one
        # whole), and what a streamed upload may have in Envoy before the client is made to wait.
        "per_connection_buffer_limit_bytes": request_validation.MAX_JSON_BYTES,
        "filter_chains": [
            {
                "filters": [
                    {
                        "name": "envoy.filters.network.http_connection_manager",
                        "typed_config": {
                            "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                            "stat_prefix": "ingress",
                            "codec_type": "AUTO",
                            # Answers do not name the proxy (no "server: envoy"; an upstream's own header is
                            # dropped at the virtual host), nor its internals (the router adds no x-envoy-*).
                            "server_header_transformation": "PASS_THROUGH",
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
                                     "response_headers_to_remove": list(HIDDEN_RESPONSE_HEADERS),
                                     **mesh_credentials.virtual_host_options(auth)}
                                ],
                                "max_direct_response_body_size_bytes": static_site.MAX_FILE_BYTES,
                            },
                            "http_filters": [
                                *([client_limit] if client_limit is not None else []),  # before auth: floods too
                                *edge_filters,
                                *([tenant_limit] if tenant_limit is not None else []),  # after auth: tenant from the token
                                # strict JSON and body sizes at the headers, before the transcoder drops unknown fields
                                request_validation.lua_filter(http_apps.OPENAI_API, settings.max_upload_bytes,
                                                              descriptor_set),
                                transcoder,
                                {
                                    "name": "envoy.filters.http.router",
                                    "typed_config": {
                                        "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router",
                                        "suppress_envoy_headers": True,
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
            # A unix socket only the mesh's user may open: the admin interface can stop Envoy, change its log
            # level and dump its configuration, so no TCP port (which any local user reaches) serves it.
            "address": {"pipe": {"path": str(admin_socket(settings)), "mode": ADMIN_SOCKET_MODE}},
            "ignore_global_conn_limit": True,
        },
        "overload_manager": edge_policy.overload_manager(edge),
        "memory_allocator_manager": edge_policy.memory_release(),
        "static_resources": {"listeners": [listener], "clusters": clusters,
                             "secrets": mesh_credentials.secrets(settings)},
    }
    if settings.gateway_stats_port:
        bootstrap["static_resources"]["listeners"].append(_stats_listener(settings))
        clusters.append(_admin_cluster(settings))
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


def _admin_cluster(settings: MeshSettings) -> dict:
    """The stats listener's way to the admin interface: its unix socket."""
    return {
        "name": ADMIN_CLUSTER,
        "type": "STATIC",
        "connect_timeout": "1s",
        "load_assignment": {"cluster_name": ADMIN_CLUSTER, "endpoints": [{"lb_endpoints": [
            {"endpoint": {"address": {"pipe": {"path": str(admin_socket(settings))}}}}]}]},
    }


def _stats_listener(settings: MeshSettings) -> dict:
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


def write(path: pathlib.Path, settings: MeshSettings, auth: AuthSettings | None = None,
          edge: EdgeSettings | None = None) -> pathlib.Path:
    """Renders the config to ``path`` (0600, the mesh's user's) and makes the admin socket's directory (0700)."""
    text = yaml.safe_dump(render(settings, auth=auth, edge=edge), sort_keys=False)
    admin_socket(settings).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    return edge_auth.write_private(path, text)


def main() -> None:
    parser = argparse.ArgumentParser(description="Render Envoy's config for the DocuThinker mesh.")
    parser.add_argument("--out", type=pathlib.Path, default=GATEWAY_DIR / "envoy.yaml")
    args = parser.parse_args()
    settings = MeshSettings()
    print(write(args.out, settings, edge_auth.local_issuer(AuthSettings(), settings.data_dir), EdgeSettings()))


if __name__ == "__main__":
    main()
