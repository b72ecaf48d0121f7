"""Client channels to other services of the mesh.

Retries live in this one layer: the channel's service config retries UNAVAILABLE on
idempotent calls a bounded number of times with backoff; callers never loop on top of it.
Each call carries the caller's remaining deadline (see ``interceptors``).
"""

from __future__ import annotations

import json

import grpc

from services.runtime.config import MeshSettings
from services.runtime.interceptors import client_interceptors

_RETRY_SERVICE_CONFIG = {
    "methodConfig": [
        {
            "name": [{}],
            "retryPolicy": {
                "maxAttempts": 3,
                "initialBackoff": "0.1s",
                "maxBackoff": "1s",
                "backoffMultiplier": 2,
                "retryableStatusCodes": ["UNAVAILABLE"],
            },
        }
    ]
}


def open_channel(target: str, settings: MeshSettings, *, retries: bool = True) -> grpc.aio.Channel:
    options: list[tuple[str, int | str]] = [
        ("grpc.max_receive_message_length", settings.max_message_bytes),
        ("grpc.max_send_message_length", settings.max_message_bytes),
        ("grpc.enable_retries", 1 if retries else 0),
        # A restarted peer is reachable again within a second, not after gRPC's default 20 s backoff.
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.min_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 1000),
    ]
    if retries:
        options.append(("grpc.service_config", json.dumps(_RETRY_SERVICE_CONFIG)))
    return grpc.aio.insecure_channel(
        target, options=options, interceptors=client_interceptors(settings.downstream_timeout_s, settings.metrics_enabled)
    )


def service_channel(service: str, settings: MeshSettings, *, retries: bool = True) -> grpc.aio.Channel:
    return open_channel(settings.address_of(service), settings, retries=retries)
