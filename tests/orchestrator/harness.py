"""Starts (and restarts) the real orchestrator in-process against fake downstream services."""

from __future__ import annotations

import grpc

from docuthinker.orchestrator.v1 import orchestrator_service_pb2 as pb
from docuthinker.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc
from services.orchestrator.service import binding
from services.orchestrator.settings import OrchestratorSettings
from services.providers.router import Router
from services.providers.settings import ProviderSettings
from services.runtime import MeshSettings, create_server
from tests.support.fake_services import FakeMesh

from .fakes import HashingEncoder, ScriptedProvider

# The gateway sets the role from the bearer token; a caller without one is a user.
ADMIN = [("x-docuthinker-role", "admin")]


async def events(call) -> list[pb.ProcessResponse]:
    return [event async for event in call]


class Orchestrator:
    """Starts (and restarts) the orchestrator on one data directory."""

    def __init__(self, fake_mesh: FakeMesh, data_dir, **config) -> None:
        self.settings = MeshSettings(
            host="127.0.0.1",
            nlp_port=fake_mesh.ports["nlp"],
            rag_port=fake_mesh.ports["rag"],
            graph_port=fake_mesh.ports["graph"],
            data_dir=data_dir,
        )
        self.config = OrchestratorSettings(**{"dlq_backoff_s": 3600, "circuit_cooldown_s": 3600, **config})
        self.openai = ScriptedProvider("openai", "gpt-4o-mini")
        self.local = ScriptedProvider("local", "SmolLM2-135M-Instruct", context_window=8192)
        self.running = None
        self.channel = None

    async def start(self, providers: str = "openai,local") -> pb_grpc.OrchestratorServiceStub:
        chosen = {name: getattr(self, name) for name in providers.split(",")}
        router = Router(chosen, ProviderSettings(provider_order=providers))
        self.running = await create_server(
            binding(self.settings, config=self.config, router=router, encoder_factory=HashingEncoder),
            self.settings,
            port=0,
        )
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{self.running.port}")
        return pb_grpc.OrchestratorServiceStub(self.channel)

    async def stop(self) -> None:
        if self.channel is not None:
            await self.channel.close()
        if self.running is not None:
            await self.running.stop(0)
        self.running = self.channel = None
