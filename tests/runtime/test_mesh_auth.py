"""The mesh credential over real in-process aio servers and channels: the one check every service port runs."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from docuthinker.nlp.v1 import nlp_service_pb2 as pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from services.runtime import MeshSettings, ServiceBinding, create_server, mesh_auth, open_channel, request_context


class Probe(pb_grpc.NlpServiceServicer):
    """Reports the tenant and role the runtime bound; a stream, to check each handler kind is guarded."""

    async def ComputeAnalytics(self, request, context):
        ctx = request_context.current()
        return pb.ComputeAnalyticsResponse(top_keywords=[pb.KeywordCount(keyword=ctx.tenant),
                                                         pb.KeywordCount(keyword=ctx.role)])

    async def Analyze(self, request, context):
        yield pb.AnalyzeResponse(result=pb.OperationResult(operation=pb.OPERATION_ANALYTICS))


class Relay(pb_grpc.NlpServiceServicer):
    def __init__(self, target: str, settings: MeshSettings) -> None:
        self._target, self._settings = target, settings

    async def ComputeAnalytics(self, request, context):
        async with open_channel(self._target, self._settings) as channel:
            return await pb_grpc.NlpServiceStub(channel).ComputeAnalytics(request)


def _binding(servicer) -> ServiceBinding:
    return ServiceBinding(name="nlp", full_names=["docuthinker.nlp.v1.NlpService"],
                          register=lambda server: pb_grpc.add_NlpServiceServicer_to_server(servicer, server))


@pytest.fixture
def settings(tmp_path) -> MeshSettings:
    return MeshSettings(mesh_credential_file=mesh_auth.ensure_credential(tmp_path / "auth" / "mesh-credential"))


@pytest.fixture
async def guarded(settings):
    running = await create_server(_binding(Probe()), settings, port=0)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{running.port}")
    yield running, channel
    await channel.close()
    await running.stop(0)


def test_the_credential_is_made_once_and_private(tmp_path):
    path = mesh_auth.ensure_credential(tmp_path / "auth" / "mesh-credential")
    first = path.read_text()
    assert len(first) >= 40 and path.stat().st_mode & 0o777 == 0o600
    assert mesh_auth.ensure_credential(path).read_text() == first, "a restart keeps the mesh's secret"


async def test_a_caller_without_the_credential_reaches_no_handler(guarded, settings):
    _, channel = guarded
    stub = pb_grpc.NlpServiceStub(channel)
    forged = [("x-tenant-id", "victim"), ("x-docuthinker-role", "admin")]
    for metadata in (forged, [*forged, (mesh_auth.CREDENTIAL_HEADER, "guess")]):
        for call in (stub.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="x"), metadata=metadata),
                     _drain(stub.Analyze(pb.AnalyzeRequest(text="x"), metadata=metadata))):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            info = error_details_pb2.ErrorInfo()
            assert rpc_status.from_call(refused.value).details[0].Unpack(info)
            assert info.reason == "MESH_CREDENTIAL_REQUIRED"
    served = await stub.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="x"),
                                         metadata=[*forged, *mesh_auth.metadata(settings.mesh_credential_file)])
    assert [k.keyword for k in served.top_keywords] == ["victim", "admin"]
    health = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
    assert health.status == health_pb2.HealthCheckResponse.SERVING, "probes need no credential"


async def _drain(call) -> None:
    async for _ in call:
        pass


async def test_the_mesh_channels_send_the_credential_and_carry_tenant_and_role(guarded, settings):
    downstream, _ = guarded
    relay = await create_server(_binding(Relay(f"127.0.0.1:{downstream.port}", settings)), settings, port=0)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{relay.port}") as channel:
            reply = await pb_grpc.NlpServiceStub(channel).ComputeAnalytics(
                pb.ComputeAnalyticsRequest(text="x"),
                metadata=[("x-tenant-id", "acme"), *mesh_auth.metadata(settings.mesh_credential_file)])
        assert [k.keyword for k in reply.top_keywords] == ["acme", "user"], "a caller without a role is a user"
    finally:
        await relay.stop(0)


async def test_without_a_configured_credential_the_port_is_open(tmp_path):
    running = await create_server(_binding(Probe()), MeshSettings(), port=0)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            await pb_grpc.NlpServiceStub(channel).ComputeAnalytics(pb.ComputeAnalyticsRequest(text="x"))
    finally:
        await running.stop(0)
