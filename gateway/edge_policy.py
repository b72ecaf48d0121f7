"""What the gateway itself answers and allows: one error shape, rate limits, connection and header limits.

Every answer Envoy produces on its own (the transcoder's 400 for bad JSON, an unknown route's
404, 413 for a body over the limit, 429 from the rate limiter, 503 "no healthy upstream", 504)
is a ``google.rpc.Status`` JSON body with the matching HTTP status and an ``ErrorInfo`` reason, as
the services' own errors are; a client parses one shape whoever answered. Local-reply mappers
only rewrite replies Envoy generated: a service's converted gRPC error keeps its own body and
details (verified on Envoy 1.40).

Fair use at the edge:
- requests per second per client address, counted *before* authentication (so a flood without a
  token, or with a bad one, is limited too), with a smaller budget for requests that carry no
  ``Authorization`` header at all; and per tenant (``x-tenant-id``, which auth, when on, sets from
  the token), counted after it: Envoy's local rate limiter with one token bucket per distinct value;
  over it, 429 ``RATE_LIMITED`` with ``RetryInfo`` and ``retry-after``;
- at most ``max_connections`` open downstream connections (more are closed on accept);
- a request must send its headers within ``request_headers_timeout_s`` (a slowloris client is
  cut off), and an idle connection is closed after ``idle_timeout_s``.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

ERROR_DOMAIN = "docuthinker.dev"
# Envoy-generated status -> (gRPC code, ErrorInfo reason). 401/403 come from gateway/auth.py when auth is on.
LOCAL_REPLIES = {
    400: (3, "BAD_REQUEST"),
    404: (5, "NOT_FOUND"),
    405: (12, "METHOD_NOT_ALLOWED"),
    408: (4, "REQUEST_TIMEOUT"),
    413: (3, "REQUEST_TOO_LARGE"),
    429: (8, "RATE_LIMITED"),
    431: (3, "HEADERS_TOO_LARGE"),
    500: (13, "GATEWAY_ERROR"),
    502: (14, "BAD_GATEWAY"),
    503: (14, "SERVICE_UNAVAILABLE"),
    504: (4, "UPSTREAM_TIMEOUT"),
}


class EdgeSettings(BaseSettings):
    """Rate, connection and header limits of the public gateway."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_GATEWAY_", frozen=True, extra="ignore")

    client_rps: int = Field(default=200, ge=0)
    """Requests per second one client address may make through the gateway (0: no per-client limit)."""
    client_burst: int = Field(default=400, ge=1)
    """Requests one client address may make at once before the per-second rate applies."""
    anonymous_rps: int = Field(default=20, ge=0)
    """Requests per second one client address may make without an ``Authorization`` header (``/v1/health`` and
    floods that never log in; the web app's files count against no limit; 0: only the per-client limit)."""
    anonymous_burst: int = Field(default=60, ge=1)
    """Requests without an ``Authorization`` header one client address may make at once."""
    tenant_rps: int = Field(default=200, ge=0)
    """Requests per second one tenant may make through the gateway (0: no per-tenant limit)."""
    tenant_burst: int = Field(default=400, ge=1)
    """Requests one tenant may make at once before the per-second rate applies."""
    max_connections: int = Field(default=1024, ge=1)
    """Open client connections the gateway accepts; more are closed at once."""
    request_headers_timeout_s: float = Field(default=10.0, gt=0)
    """A client must send a request's headers within this; slower ones are cut off (slowloris)."""
    idle_timeout_s: float = Field(default=300.0, gt=0)
    """A client connection with no request in flight for this long is closed."""
    rate_limit_max_keys: int = Field(default=10_000, ge=1)
    """Distinct client addresses or tenants the rate limiter tracks at once (least recently seen dropped)."""
    max_heap_mb: int = Field(default=160, ge=64)
    """Envoy's heap ceiling (its overload manager): past 90% it gives free memory back to the system and resets the
    requests holding the most buffered data, past 98% it refuses new requests (503), so held uploads or downloads
    cannot grow it without bound. Envoy keeps 60-100 MB outside what the monitor counts (its binary, and freed pages
    it has not returned yet), and a burst can pass the limit between two checks: 20 held 24 MiB uploads, each
    on a fresh mesh, peaked at 108-235 MB of RSS with 160, 245-293 MB with 192 and 297-328 MB with 256, against
    the 300 MB the hostile-client test holds it to. Raise it for many concurrent large downloads: the transcoder
    holds a whole unary response (a 25 MiB document is about 50 MB while it passes)."""


def _status_body(grpc_code: int, reason: str, http_status: int) -> dict:
    details: list[dict] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason,
                            "domain": ERROR_DOMAIN, "metadata": {"http_status": str(http_status)}}]
    if http_status == 429:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retry_delay": "1s"})
    return {"code": grpc_code, "message": "%LOCAL_REPLY_BODY%", "details": details}


def local_reply_mappers() -> list[dict]:
    """Envoy's own answers as google.rpc.Status JSON, one mapper per status."""
    return [
        {
            "filter": {"status_code_filter": {"comparison": {
                "op": "EQ", "value": {"default_value": status, "runtime_key": f"docuthinker.edge_reply_{status}"},
            }}},
            "body_format_override": {"json_format": _status_body(code, reason, status),
                                     "content_type": "application/json"},
        }
        for status, (code, reason) in LOCAL_REPLIES.items()
    ]


def _bucket(rps: int, burst: int) -> dict:
    return {"max_tokens": max(burst, rps), "tokens_per_fill": rps, "fill_interval": "1s"}


def _local_rate_limit(name: str, stat_prefix: str, descriptors: list[dict], actions: list[dict],
                      settings: EdgeSettings) -> dict | None:
    if not descriptors:
        return None
    everyone = 100 * max(settings.client_rps, settings.tenant_rps, settings.anonymous_rps)  # the filter needs a
    percent = {"default_value": {"numerator": 100, "denominator": "HUNDRED"}}  # default bucket: far above all
    return {
        "name": name,
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
            "stat_prefix": stat_prefix,
            "token_bucket": _bucket(everyone, everyone),
            "filter_enabled": {**percent, "runtime_key": f"docuthinker.{stat_prefix}_enabled"},
            "filter_enforced": {**percent, "runtime_key": f"docuthinker.{stat_prefix}_enforced"},
            "descriptors": descriptors,
            "rate_limits": actions,
            "max_dynamic_descriptors": settings.rate_limit_max_keys,
            "response_headers_to_add": [
                {"append_action": "OVERWRITE_IF_EXISTS_OR_ADD", "header": {"key": "retry-after", "value": "1"}}
            ],
        },
    }


def client_rate_limit_filter(settings: EdgeSettings, tokens_required: bool = True) -> dict | None:
    """The limiter that runs before authentication: one bucket per client address, and (when the gateway requires
    tokens) one per client address for its requests without an ``Authorization`` header; None when both are off."""
    descriptors: list[dict] = []
    actions: list[dict] = []
    if settings.client_rps:
        descriptors.append({"entries": [{"key": "remote_address"}],
                            "token_bucket": _bucket(settings.client_rps, settings.client_burst)})
        actions.append({"actions": [{"remote_address": {}}]})
    if settings.anonymous_rps and tokens_required:
        descriptors.append({"entries": [{"key": "remote_address"}, {"key": "credentials", "value": "none"}],
                            "token_bucket": _bucket(settings.anonymous_rps, settings.anonymous_burst)})
        actions.append({"actions": [{"remote_address": {}}, {"header_value_match": {
            "descriptor_key": "credentials", "descriptor_value": "none", "expect_match": False,
            "headers": [{"name": "authorization", "present_match": True}]}}]})
    return _local_rate_limit("docuthinker.client_rate_limit", "edge_client_rate_limit", descriptors, actions, settings)


def tenant_rate_limit_filter(settings: EdgeSettings) -> dict | None:
    """The limiter that runs after authentication (which sets ``x-tenant-id`` from the token): one bucket per
    tenant; None when off."""
    if not settings.tenant_rps:
        return None
    descriptors = [{"entries": [{"key": "tenant"}], "token_bucket": _bucket(settings.tenant_rps, settings.tenant_burst)}]
    actions = [{"actions": [{"request_headers": {"header_name": "x-tenant-id", "descriptor_key": "tenant",
                                                 "skip_if_absent": True}}]}]
    return _local_rate_limit("envoy.filters.http.local_ratelimit", "edge_rate_limit", descriptors, actions, settings)


HEAP_MONITOR = "envoy.resource_monitors.fixed_heap"


def overload_manager(settings: EdgeSettings) -> dict:
    """Bootstrap section capping open client connections (the admin listener is exempt) and Envoy's heap."""
    def at(fraction: float) -> list[dict]:
        return [{"name": HEAP_MONITOR, "threshold": {"value": fraction}}]

    return {
        # Checked ten times a second: a burst of uploads moves tens of MB through Envoy between two checks.
        "refresh_interval": "0.1s",
        "resource_monitors": [
            {
                "name": "envoy.resource_monitors.global_downstream_max_connections",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3."
                             "DownstreamConnectionsConfig",
                    "max_active_downstream_connections": settings.max_connections,
                },
            },
            {
                "name": HEAP_MONITOR,
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.resource_monitors.fixed_heap.v3.FixedHeapConfig",
                    "max_heap_size_bytes": settings.max_heap_mb * 1024 * 1024,
                },
            },
        ],
        "actions": [
            {"name": "envoy.overload_actions.shrink_heap", "triggers": at(0.90)},
            # The streams holding the most buffered bytes first (those with at least 1 MiB are tracked, below).
            {"name": "envoy.overload_actions.reset_high_memory_stream", "triggers": [{
                "name": HEAP_MONITOR, "scaled": {"scaling_threshold": 0.90, "saturation_threshold": 0.98}}]},
            {"name": "envoy.overload_actions.stop_accepting_requests", "triggers": at(0.98)},
        ],
        "buffer_factory_config": {"minimum_account_to_track_power_of_two": 20},
    }


def memory_release() -> dict:
    """Bootstrap section: Envoy returns freed memory to the system every second (up to 64 MiB a time) instead
    of keeping it for later, so a burst of large requests leaves no lasting footprint."""
    return {"bytes_to_release": 64 * 1024 * 1024, "memory_release_interval": "1s"}


def connection_manager_options(settings: EdgeSettings) -> dict:
    """Timeouts merged into the public HTTP connection manager."""
    return {
        "request_headers_timeout": f"{settings.request_headers_timeout_s}s",
        "common_http_protocol_options": {"idle_timeout": f"{settings.idle_timeout_s}s"},
    }
