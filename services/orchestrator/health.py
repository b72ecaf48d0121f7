"""Aggregated health of the mesh: the orchestrator's view of every downstream service."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.runtime.config import MeshSettings

DOWNSTREAM = ("rag", "nlp", "graph")


@dataclass(frozen=True)
class ServiceHealth:
    name: str
    status: str  # SERVING, NOT_SERVING, UNKNOWN or UNREACHABLE
    address: str
    latency_ms: float
    detail: str = ""


class HealthProbe:
    """Checks each downstream service with the standard gRPC health protocol."""

    def __init__(self, settings: MeshSettings, channels: dict[str, grpc.aio.Channel], timeout_s: float = 2.0) -> None:
        self._settings = settings
        self._channels = channels
        self._timeout_s = timeout_s

    async def _check(self, name: str) -> ServiceHealth:
        address = self._settings.address_of(name)
        started = time.perf_counter()
        try:
            stub = health_pb2_grpc.HealthStub(self._channels[name])
            reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=self._timeout_s)
            status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
            detail = ""
        except grpc.aio.AioRpcError as exc:
            status = "UNREACHABLE"
            detail = f"{exc.code().name}: {exc.details()}"
        return ServiceHealth(name, status, address, (time.perf_counter() - started) * 1000, detail)

    async def check_all(self) -> list[ServiceHealth]:
        return list(await asyncio.gather(*(self._check(name) for name in DOWNSTREAM)))
