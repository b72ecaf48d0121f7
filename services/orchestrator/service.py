"""Wires the orchestrator into the shared runtime."""

from __future__ import annotations

from docuthinker.orchestrator.v1 import orchestrator_service_pb2, orchestrator_service_pb2_grpc
from services.orchestrator.health import DOWNSTREAM, HealthProbe
from services.orchestrator.servicer import OrchestratorServicer
from services.runtime import MeshSettings, ServiceBinding, service_channel

FULL_NAME = orchestrator_service_pb2.DESCRIPTOR.services_by_name["OrchestratorService"].full_name


def binding(settings: MeshSettings) -> ServiceBinding:
    channels: dict = {}
    servicer = OrchestratorServicer(HealthProbe(settings, channels))

    async def on_start() -> None:
        # Health probes must see failures at once: no transparent retries on this channel.
        for name in DOWNSTREAM:
            channels[name] = service_channel(name, settings, retries=False)

    async def on_stop() -> None:
        for channel in channels.values():
            await channel.close()

    return ServiceBinding(
        name="orchestrator",
        full_names=[FULL_NAME],
        register=lambda server: orchestrator_service_pb2_grpc.add_OrchestratorServiceServicer_to_server(
            servicer, server
        ),
        on_start=on_start,
        on_stop=on_stop,
    )
