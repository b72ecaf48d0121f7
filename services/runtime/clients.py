"""The client side of the mesh: one channel per peer, owned by the service binding, and the
base of the typed clients (``services/clients/<service>.py``).

A ``ChannelPool`` opens a peer's channel on first use (a ``grpc.aio`` channel belongs to the
event loop that creates it, and a binding is built before the server's loop runs) and the
server closes the pool when it stops. The channels carry the client interceptors (tenant,
request id, deadline, metrics, traces) and the contract-derived retry policy
(``channels``). A failed call leaves a typed client as ``errors.remote_error``'s domain error.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, ClassVar, TypeAlias

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.runtime import request_context
from services.runtime.channels import service_channel
from services.runtime.config import MeshSettings
from services.runtime.errors import remote_error


class ChannelPool:
    """The channels of one process to its peers, by service name (and retry mode)."""

    def __init__(self, settings: MeshSettings) -> None:
        self._settings = settings
        self._channels: dict[tuple[str, bool], grpc.aio.Channel] = {}

    def channel(self, service: str, *, retries: bool = True) -> grpc.aio.Channel:
        """``service``'s channel; ``retries=False`` for health probes, which must see a failure at once."""
        key = (service, retries)
        if key not in self._channels:
            self._channels[key] = service_channel(service, self._settings, retries=retries)
        return self._channels[key]

    async def serving_status(self, service: str, timeout_s: float) -> str:
        """``service``'s standard gRPC health (SERVING, NOT_SERVING ...), on a channel without retries
        (a probe must see a failure at once); an unreachable peer raises ``remote_error``'s error."""
        stub = health_pb2_grpc.HealthStub(self.channel(service, retries=False))
        try:
            reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=timeout_s)
        except grpc.aio.AioRpcError as exc:
            raise remote_error(exc, f"{service}.Health") from None
        name: str = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        return name

    @property
    def open(self) -> int:
        return len(self._channels)

    async def close(self) -> None:
        channels, self._channels = self._channels, {}
        for channel in channels.values():
            await channel.close()


Peer: TypeAlias = ChannelPool | grpc.aio.Channel
"""Where a typed client's calls go: a pool (the service's own peers) or one channel (tests, tools)."""


def tenant_metadata(tenant: str | None) -> tuple[tuple[str, str], ...]:
    """Call metadata naming ``tenant`` (it wins over the caller's ambient one); none for ``None``."""
    return () if tenant is None else ((request_context.TENANT_HEADER, tenant),)


class ServiceClient:
    """One service's stub over a pooled channel; every failed call raises ``remote_error``."""

    SERVICE: ClassVar[str]
    STUB: ClassVar[Any]

    def __init__(self, peer: Peer) -> None:
        self._peer = peer
        self._stub: Any = None

    def _stub_now(self) -> Any:
        if self._stub is None:  # resolved on first use: inside the loop that owns the channel
            channel = self._peer.channel(self.SERVICE) if isinstance(self._peer, ChannelPool) else self._peer
            self._stub = self.STUB(channel)
        return self._stub

    async def _unary(self, method: str, request: Any, **options: Any) -> Any:
        """A unary call, or a client-streaming one when ``request`` is an iterator of messages."""
        try:
            return await getattr(self._stub_now(), method)(request, **options)
        except grpc.aio.AioRpcError as exc:
            raise remote_error(exc, f"{self.SERVICE}.{method}") from None

    async def _stream(self, method: str, request: Any, **options: Any) -> AsyncGenerator[Any, None]:
        call = getattr(self._stub_now(), method)(request, **options)
        try:
            async for message in call:
                yield message
        except grpc.aio.AioRpcError as exc:
            raise remote_error(exc, f"{self.SERVICE}.{method}") from None
        finally:
            call.cancel()
