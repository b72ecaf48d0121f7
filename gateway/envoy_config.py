"""Renders Envoy's configuration for the mesh from the contracts and the mesh settings.

This module assembles the bootstrap: the public listener (edge policy, auth, request validation, the JSON
transcoder), one cluster per service, and the admin interface. The RPC routes come from the descriptor set
(``gateway/rpc_routes.py``); the access log, tracing and the stats listener from ``gateway/observability.py``.
With auth on (the default), bearer tokens are verified first and the tenant and role are taken from them
(``gateway/auth.py``); every forwarded request carries the mesh credential (``gateway/mesh_credentials.py``).

    python -m gateway.envoy_config --out gateway/envoy.yaml   # render with the current env
"""

from __future__ import annotations

import argparse
import pathlib

import yaml

from gateway import auth as edge_auth
from gateway import (
    edge_policy,
    http_apps,
    mesh_credentials,
    observability,
    request_validation,
    rpc_routes,
    static_site,
    upstreams,
)
from gateway.auth import AuthSettings
from gateway.edge_policy import EdgeSettings
from gateway.rpc_routes import DESCRIPTOR_SET, GATEWAY_DIR
from services.runtime.config import SERVICE_NAMES, MeshSettings

TRANSCODER = "envoy.filters.http.grpc_json_transcoder"
HEADER_MUTATION = "envoy.filters.http.header_mutation"
HIDDEN_RESPONSE_HEADERS = ("server", "x-powered-by", "x-envoy-upstream-service-time")
"""Response headers that would name the software behind the gateway (an upstream's aiohttp says its version)."""


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
    methods = rpc_routes.load_methods(descriptor_set)
    full_names = {short: ms[0].service for short, ms in methods.items()}
    routes = [*http_apps.routes(), *(r for service in SERVICE_NAMES
                                     for r in rpc_routes.routes(service, methods[service], _replicated(settings, service))),
              *rpc_routes.reflection_routes()]
    edge_filters = edge_auth.http_filters(auth) if auth is not None and auth.enabled else []
    client_limit = edge_policy.client_rate_limit_filter(edge, tokens_required=bool(edge_filters))
    tenant_limit = edge_policy.tenant_rate_limit_filter(edge)
    # The web app at / (web/): exact-path routes answered by Envoy itself, ahead of the RPC routes, with neither
    # authentication nor the per-address limiter: the site is ~20 fixed files served from memory and one page load
    # asks for all of them, so a budget sized for API calls left the app without its modules (429) after a few
    # reloads, or for everyone behind one NAT address.
    site_off = [TRANSCODER, *(f["name"] for f in edge_filters if f["name"] != HEADER_MUTATION)]
    if client_limit is not None:
        site_off.append(client_limit["name"])
    web_routes = static_site.routes(site_off)
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
                                        "log_format": {"json_format": observability.ACCESS_LOG_FORMAT},
                                    },
                                }
                            ],
                            **observability.tracing(settings),
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
            "address": {"pipe": {"path": str(observability.admin_socket(settings)), "mode": observability.ADMIN_SOCKET_MODE}},
            "ignore_global_conn_limit": True,
        },
        "overload_manager": edge_policy.overload_manager(edge),
        "memory_allocator_manager": edge_policy.memory_release(),
        "static_resources": {"listeners": [listener], "clusters": clusters,
                             "secrets": mesh_credentials.secrets(settings)},
    }
    if settings.gateway_stats_port:
        bootstrap["static_resources"]["listeners"].append(observability.stats_listener(settings))
        clusters.append(observability.admin_cluster(settings))
    if settings.otlp_endpoint:
        clusters.append(observability.collector_cluster(settings.otlp_endpoint))
        # Export spans every half second (Envoy's default is 5 s), so a trace is complete soon after its request.
        bootstrap["layered_runtime"] = {"layers": [{"name": "tracing", "static_layer": {
            "tracing.opentelemetry.flush_interval_ms": 500, "tracing.opentelemetry.min_flush_spans": 1}}]}
    return bootstrap



def write(path: pathlib.Path, settings: MeshSettings, auth: AuthSettings | None = None,
          edge: EdgeSettings | None = None) -> pathlib.Path:
    """Renders the config to ``path`` (0600, the mesh's user's) and makes the admin socket's directory (0700)."""
    text = yaml.safe_dump(render(settings, auth=auth, edge=edge), sort_keys=False)
    observability.admin_socket(settings).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    return edge_auth.write_private(path, text)


def main() -> None:
    parser = argparse.ArgumentParser(description="Render Envoy's config for the DocuThinker mesh.")
    parser.add_argument("--out", type=pathlib.Path, default=GATEWAY_DIR / "envoy.yaml")
    args = parser.parse_args()
    settings = MeshSettings()
    print(write(args.out, settings, edge_auth.local_issuer(AuthSettings(), settings.data_dir), EdgeSettings()))


if __name__ == "__main__":
    main()
