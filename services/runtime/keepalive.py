"""HTTP/2 keepalive between services, so a peer that stops answering fails its callers fast.

A peer that is paused (SIGSTOP), hung in native code or cut off keeps its TCP connection open: the
kernel still acknowledges bytes, so a call on that connection waits out its whole deadline
(10-17 s measured before this, up to the 30 s default). An HTTP/2 PING needs the peer's process to
answer; with keepalive on, a connection whose pings go unanswered for ``peer_keepalive_timeout_s``
is closed and every call on it ends with UNAVAILABLE at once, whatever its deadline. New calls then
find the channel reconnecting (its connect attempts time out within a second, ``channels``) and fail
fast with UNAVAILABLE too, until the peer answers again.

Servers must tolerate pings that often, even with no call in flight, or they answer GOAWAY
(``too_many_pings``); ``server_options`` says so.
"""

from __future__ import annotations

from services.runtime.config import MeshSettings


def channel_options(settings: MeshSettings) -> list[tuple[str, int]]:
    """Client side: ping every ``peer_keepalive_s`` and give up after ``peer_keepalive_timeout_s`` of silence."""
    return [
        ("grpc.keepalive_time_ms", int(settings.peer_keepalive_s * 1000)),
        ("grpc.keepalive_timeout_ms", int(settings.peer_keepalive_timeout_s * 1000)),
        # gRPC's own ping timeout (60 s) otherwise bounds an unanswered keepalive ping too.
        ("grpc.http2.ping_timeout_ms", int(settings.peer_keepalive_timeout_s * 1000)),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
    ]


def server_options(settings: MeshSettings) -> list[tuple[str, int]]:
    """Server side: accept the mesh's pings (and ping idle callers back, so a paused caller is noticed too)."""
    interval = int(settings.peer_keepalive_s * 1000)
    return [
        ("grpc.keepalive_time_ms", max(interval, 10_000)),
        ("grpc.keepalive_timeout_ms", int(settings.peer_keepalive_timeout_s * 1000)),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", max(100, interval // 2)),
        ("grpc.http2.max_ping_strikes", 0),
    ]
