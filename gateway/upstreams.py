"""Envoy's view of one upstream service: every replica of it, checked and ejected on its own.

One function, ``cluster``, shared by the gRPC services and the plain-HTTP apps. The replicas come
from the service's target setting (``services.runtime.peers``): a list of addresses gives a STATIC
cluster with one endpoint each, a ``dns:///`` name a STRICT_DNS cluster holding every address the
name resolves to (a headless Service: one per ready pod), re-resolved as pods come and go; a single
name (a ClusterIP Service) is a STRICT_DNS cluster too. Requests go round-robin to healthy hosts.

Two signals take a replica out of rotation, each on its own:
- active health checks (gRPC health protocol, or an HTTP path), every ``interval``: a replica that
  is stopping (it reports NOT_SERVING) or dead leaves before a request finds out;
- outlier detection, on live traffic: connect failures, resets and gateway errors (UNAVAILABLE,
  DEADLINE_EXCEEDED) in a row eject it for ``base_ejection_time``. Application errors (INTERNAL for a
  bad document) do not count, so one poisoned request cannot eject a healthy replica.
"""

from __future__ import annotations

import copy

from services.runtime.peers import Peer

HEALTH_INTERVAL = "2s"
_HTTP2 = {
    "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
        "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
        "explicit_http_config": {"http2_protocol_options": {}},
    }
}


MAX_CONCURRENT_RETRIES = 256
"""Retries in flight per cluster (Envoy's default of 3 overflowed during a replica kill)."""


def is_literal(host: str) -> bool:
    return host.replace(".", "").isdigit() or ":" in host


def outlier_detection() -> dict:
    return {
        "interval": HEALTH_INTERVAL,
        "base_ejection_time": "10s",
        "max_ejection_time": "60s",
        # Local-origin errors (refused connections, resets) apart from upstream answers: a killed replica is
        # ejected after two refused connections, not after five failed requests.
        "split_external_local_origin_errors": True,
        "consecutive_local_origin_failure": 2,
        "enforcing_consecutive_local_origin_failure": 100,
        "consecutive_gateway_failure": 3,
        "enforcing_consecutive_gateway_failure": 100,
        "enforcing_consecutive_5xx": 0,
        "enforcing_success_rate": 0,
        "enforcing_local_origin_success_rate": 0,
        # At most half the replicas out by traffic alone: a shared cause (a slow database) must not empty the pool.
        "max_ejection_percent": 50,
    }


def cluster(name: str, peer: Peer, health_check: dict, http2: bool = True, keepalive: dict | None = None,
            upstream_filters: list[dict] | None = None) -> dict:
    """The cluster ``name`` over every replica of ``peer``; ``health_check`` is the checker's own part
    (``{"grpc_health_check": ...}`` or ``{"http_health_check": ...}``); ``keepalive``: HTTP/2 PINGs
    (``{"interval": ..., "timeout": ...}``) so a paused replica's connection is closed within seconds;
    ``upstream_filters``: HTTP filters run on every request sent to it (``gateway/mesh_credentials.py``)."""
    static = not peer.dns and all(is_literal(host) for host, _ in peer.endpoints)
    body: dict = {
        "name": name,
        "type": "STATIC" if static else "STRICT_DNS",
        "connect_timeout": "1s",
        "lb_policy": "ROUND_ROBIN",
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [{"lb_endpoints": [
                {"endpoint": {"address": {"socket_address": {"address": host, "port_value": port}}}}
                for host, port in peer.endpoints
            ]}],
        },
        "health_checks": [
            {
                # Two misses, each given 2 s: a service busy warming up right after a (re)start (loading
                # models on two shared cores) answers its probe late once; one miss must not take it out.
                # A dead one refuses connections at once, so it is still out within one interval or two.
                "timeout": "2s",
                "interval": HEALTH_INTERVAL,
                "no_traffic_interval": HEALTH_INTERVAL,
                "unhealthy_threshold": 2,
                "healthy_threshold": 1,
                **health_check,
            }
        ],
        # With every host unhealthy, fail fast with 503 instead of Envoy's panic routing to dead hosts.
        "common_lb_config": {"healthy_panic_threshold": {"value": 0}},
        # Envoy allows 3 concurrent retries per cluster by default, counted while each waits out its
        # backoff: when a replica dies under load more idempotent calls than that retry at once, and the
        # 4th got the dead host's "upstream connect error" 503 (test_replicas counts Envoy's overflow).
        "circuit_breakers": {"thresholds": [{"priority": "DEFAULT", "max_retries": MAX_CONCURRENT_RETRIES}]},
    }
    if not static or len(peer.endpoints) > 1:
        # Ejection moves traffic to another replica; a lone host has none, and Envoy ejects at least one host
        # whatever max_ejection_percent says: a restarted single service would stay unroutable for the whole
        # ejection time (10-60 s) after its health check passed. The health check alone routes around it.
        body["outlier_detection"] = outlier_detection()
    if not static:
        body["dns_lookup_family"] = "V4_PREFERRED"
        body["dns_refresh_rate"] = "5s"
        body["respect_dns_ttl"] = True
    if http2 or upstream_filters:
        body["typed_extension_protocol_options"] = copy.deepcopy(_HTTP2)
        options = body["typed_extension_protocol_options"]["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
        if not http2:
            options["explicit_http_config"] = {"http_protocol_options": {}}
        elif keepalive:
            options["explicit_http_config"]["http2_protocol_options"]["connection_keepalive"] = keepalive
        if upstream_filters:
            options["http_filters"] = copy.deepcopy(upstream_filters)
    return body
