"""Client channels to other services of the mesh.

Retries live in this one layer: the channel's service config retries UNAVAILABLE a bounded
number of times with backoff, on the methods whose contract declares them free of side effects
(``contracts``); callers never loop on top of it.
Each call carries the caller's remaining deadline (see ``interceptors``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import grpc

from services.runtime import keepalive, mesh_auth
from services.runtime.config import MeshSettings
from services.runtime.contracts import RpcMethod, mesh_methods
from services.runtime.interceptors import ClientObservability, ContextPropagation, client_interceptors
from services.runtime.peers import channel_target

_RETRY_POLICY = {
    "maxAttempts": 3,
    "initialBackoff": "0.1s",
    "maxBackoff": "1s",
    "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"],
}


def retry_service_config(methods: Sequence[RpcMethod]) -> dict[str, Any]:
    """The service config retrying exactly the retry-safe ``methods`` (no wildcard entry)."""
    names = [{"service": m.service, "method": m.name} for m in methods if m.retry_safe]
    return {"methodConfig": [{"name": names, "retryPolicy": _RETRY_POLICY}]}


_RETRY_SERVICE_CONFIG = retry_service_config(mesh_methods())


def channel_options(settings: MeshSettings, *, retries: bool = True,
                    extra_options: Sequence[tuple[str, object]] = ()) -> list[tuple[str, object]]:
    options: list[tuple[str, object]] = [
        *extra_options,
        ("grpc.max_receive_message_length", settings.max_message_bytes),
        ("grpc.max_send_message_length", settings.max_message_bytes),
        ("grpc.enable_retries", 1 if retries else 0),
        # A restarted peer is reachable again within a second, not after gRPC's default 20 s backoff.
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.min_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 1000),
        *keepalive.channel_options(settings),  # a paused peer fails its calls with UNAVAILABLE in seconds
    ]
    if retries:
        options.append(("grpc.service_config", json.dumps(_RETRY_SERVICE_CONFIG)))
    return options


def open_channel(target: str, settings: MeshSettings, *, retries: bool = True,
                 extra_options: Sequence[tuple[str, object]] = ()) -> grpc.aio.Channel:
    interceptors = client_interceptors([ClientObservability(settings.metrics_enabled),
                                        ContextPropagation(settings.downstream_timeout_s),
                                        *mesh_auth.client_concerns(settings.mesh_credential_file)])
    return grpc.aio.insecure_channel(
        target, options=channel_options(settings, retries=retries, extra_options=extra_options),
        interceptors=interceptors,
    )


def service_channel(service: str, settings: MeshSettings, *, retries: bool = True) -> grpc.aio.Channel:
    # Every replica behind the peer's target, calls spread round-robin (a retry lands on the next replica).
    target, balancing = channel_target(settings.address_of(service))
    return open_channel(target, settings, retries=retries, extra_options=balancing)
