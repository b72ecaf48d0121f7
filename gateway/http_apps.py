"""Envoy routes and clusters for the plain-HTTP apps behind the gateway (not gRPC, so not transcoded).

Today one: the OpenAI-compatible chat API (``services/openai_api``), for exactly ``POST /v1/chat/completions``
and ``GET /v1/models``. The transcoder is disabled on these routes (it would answer 404 for a path no RPC maps),
auth (when on) still runs first, so the app gets ``x-tenant-id`` from the token like every service does.
"""

from __future__ import annotations

from gateway import mesh_credentials, upstreams
from services.runtime.config import MeshSettings

OPENAI_API = "openai_api"
OPENAI_PATHS = ("/v1/chat/completions", "/v1/models")
HEALTH_PATH = "/healthz"
_TRANSCODER = "envoy.filters.http.grpc_json_transcoder"


def routes() -> list[dict]:
    """Exact-path routes; answers may stream (SSE), so no overall timeout, only an idle one."""
    return [
        {
            "name": f"{OPENAI_API}:{path}",
            "match": {"path": path},
            "route": {"cluster": OPENAI_API, "timeout": "0s", "idle_timeout": "300s"},
            "typed_per_filter_config": {
                _TRANSCODER: {"@type": "type.googleapis.com/envoy.config.route.v3.FilterConfig", "disabled": True}
            },
        }
        for path in OPENAI_PATHS
    ]


def clusters(settings: MeshSettings) -> list[dict]:
    return [upstreams.cluster(OPENAI_API, settings.peer_of(OPENAI_API), {"http_health_check": {"path": HEALTH_PATH}},
                              http2=False, upstream_filters=mesh_credentials.upstream_filters(settings))]
