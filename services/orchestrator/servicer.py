"""gRPC transport of the orchestrator: maps protobuf to domain calls."""

from __future__ import annotations

from google.protobuf import timestamp_pb2

from docuthinker.orchestrator.v1 import orchestrator_service_pb2 as pb
from docuthinker.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc
from services.orchestrator.health import HealthProbe


class OrchestratorServicer(pb_grpc.OrchestratorServiceServicer):
    def __init__(self, health: HealthProbe) -> None:
        self._health = health

    async def GetHealth(self, request: pb.GetHealthRequest, context) -> pb.GetHealthResponse:
        services = await self._health.check_all()
        now = timestamp_pb2.Timestamp()
        now.GetCurrentTime()
        overall = "SERVING" if all(s.status == "SERVING" for s in services) else "DEGRADED"
        return pb.GetHealthResponse(
            status=overall,
            time=now,
            services=[
                pb.ServiceHealth(name="orchestrator", status="SERVING", address="self", latency_ms=0.0),
                *(
                    pb.ServiceHealth(
                        name=s.name, status=s.status, address=s.address, latency_ms=s.latency_ms, detail=s.detail
                    )
                    for s in services
                ),
            ],
        )
