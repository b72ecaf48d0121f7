"""The shared runtime over real in-process aio servers and channels."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from docuthinker.nlp.v1 import nlp_service_pb2 as pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from services.runtime import MeshSettings, ServiceBinding, create_server, open_channel, request_context
from services.runtime.errors import FieldViolation, InvalidArgument, NotFound


def _binding(servicer) -> ServiceBinding:
    return ServiceBinding(
        name="nlp",
        full_names=["docuthinker.nlp.v1.NlpService"],
        register=lambda server: pb_grpc.add_NlpServiceServicer_to_server(servicer, server),
    )


class Probe(pb_grpc.NlpServiceServicer):
    """Test double at the transport boundary: reports what the runtime gave the handler. A request with the
    text "hold" sets ``held`` and waits for ``release`` (a call known to be in flight)."""

    held = asyncio.Event()
    release = asyncio.Event()

    async def ComputeAnalytics(self, request, context):
        if request.text == "hold":
            Probe.held.set()
            await Probe.release.wait()
        ctx = request_context.current()
        remaining = ctx.time_remaining()
        return pb.ComputeAnalyticsResponse(
            characters=-1 if remaining is None else int(remaining * 1000),
            top_keywords=[pb.KeywordCount(keyword=ctx.tenant), pb.KeywordCount(keyword=ctx.request_id)],
        )

    async def ExtractEntities(self, request, context):
        raise InvalidArgument("bad labels", reason="BAD_LABELS", violations=[FieldViolation("labels", "unknown")])

    async def AnalyzeSentiment(self, request, context):
        raise RuntimeError("secret internal detail")

    async def Analyze(self, request, context):
        if request.text == "fail-first":
            raise NotFound("no such document", reason="DOCUMENT_NOT_FOUND")
        yield pb.AnalyzeResponse(result=pb.OperationResult(operation=pb.OPERATION_ANALYTICS))
        raise RuntimeError("broke mid-stream")


class Relay(pb_grpc.NlpServiceServicer):
    """Calls a downstream service the way services call each other."""

    def __init__(self, channel_factory):
        self._channel_factory = channel_factory

    async def ComputeAnalytics(self, request, context):
        async with self._channel_factory() as channel:
            return await pb_grpc.NlpServiceStub(channel).ComputeAnalytics(request)


@pytest.fixture
async def probe():
    settings = MeshSettings()
    running = await create_server(_binding(Probe()), settings, port=0)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{running.port}")
    yield running, pb_grpc.NlpServiceStub(channel), channel
    await channel.close()
    await running.stop(0)


async def test_domain_error_carries_error_info_and_field_violations(probe):
    _, stub, _ = probe
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.ExtractEntities(pb.ExtractEntitiesRequest(text="x"))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    status = rpc_status.from_call(caught.value)
    info, bad = error_details_pb2.ErrorInfo(), error_details_pb2.BadRequest()
    assert status.details[0].Unpack(info) and info.reason == "BAD_LABELS"
    assert status.details[1].Unpack(bad) and bad.field_violations[0].field == "labels"


async def test_unexpected_exception_is_internal_without_leaking_details(probe):
    _, stub, _ = probe
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.AnalyzeSentiment(pb.AnalyzeSentimentRequest(text="x"))
    assert caught.value.code() == grpc.StatusCode.INTERNAL
    assert "secret" not in (caught.value.details() or "")


async def test_unimplemented_method_says_so_clearly():
    running = await create_server(_binding(pb_grpc.NlpServiceServicer()), MeshSettings(), port=0)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await pb_grpc.NlpServiceStub(channel).Summarize(pb.SummarizeRequest(text="x"))
    await running.stop(0)
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "docuthinker.nlp.v1.NlpService/Summarize is not implemented yet" in caught.value.details()


async def test_stream_failing_after_first_message_ends_with_in_band_error(probe):
    _, stub, _ = probe
    call = stub.Analyze(pb.AnalyzeRequest(text="go"))
    events = [event async for event in call]
    assert await call.code() == grpc.StatusCode.OK
    assert [e.WhichOneof("event") for e in events] == ["result", "error"]
    assert events[-1].error.code == grpc.StatusCode.INTERNAL.value[0]


async def test_stream_failing_before_first_message_fails_the_rpc(probe):
    _, stub, _ = probe
    call = stub.Analyze(pb.AnalyzeRequest(text="fail-first"))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        [event async for event in call]
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


async def test_tenant_defaults_and_invalid_tenant_is_rejected(probe):
    _, stub, _ = probe
    reply = await stub.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="x"))
    assert reply.top_keywords[0].keyword == "default"
    reply = await stub.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="x"), metadata=[("x-tenant-id", "acme")])
    assert reply.top_keywords[0].keyword == "acme"
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="x"), metadata=[("x-tenant-id", "a b/../c")])
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("metadata", [
    [("x-tenant-id", "")],  # present but empty: not the default tenant
    [("x-tenant-id", "acme"), ("x-tenant-id", "globex")],  # two tenants: neither is picked
    [("x-tenant-id", "acme"), ("x-tenant-id", "acme")],
])
async def test_an_empty_or_repeated_tenant_header_is_refused(probe, metadata):
    _, stub, _ = probe
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="x"), metadata=metadata)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "empty, repeated or malformed" in caught.value.details()


async def test_deadline_tenant_and_request_id_propagate_downstream(probe):
    downstream, _, _ = probe
    settings = MeshSettings()
    relay = await create_server(
        _binding(Relay(lambda: open_channel(f"127.0.0.1:{downstream.port}", settings))), settings, port=0
    )
    async with grpc.aio.insecure_channel(f"127.0.0.1:{relay.port}") as channel:
        reply = await pb_grpc.NlpServiceStub(channel).ComputeAnalytics(
            pb.ComputeAnalyticsRequest(text="x"),
            timeout=5.0,
            metadata=[("x-tenant-id", "acme"), ("x-request-id", "req-42")],
        )
    await relay.stop(0)
    assert 0 < reply.characters <= 5500  # the downstream saw the caller's remaining deadline
    assert [k.keyword for k in reply.top_keywords] == ["acme", "req-42"]


async def test_downstream_without_caller_deadline_gets_the_default(probe):
    downstream, _, _ = probe
    settings = MeshSettings(downstream_timeout_s=7)
    async with open_channel(f"127.0.0.1:{downstream.port}", settings) as channel:
        reply = await pb_grpc.NlpServiceStub(channel).ComputeAnalytics(pb.ComputeAnalyticsRequest(text="x"))
    assert 5000 < reply.characters <= 7500  # ~7 s: the configured default, not none and not 30 s


async def test_graceful_stop_reports_not_serving_then_drains(probe):
    running, stub, channel = probe
    health = health_pb2_grpc.HealthStub(channel)
    assert (await health.Check(health_pb2.HealthCheckRequest())).status == health_pb2.HealthCheckResponse.SERVING
    await running.set_serving(False)
    reply = await health.Check(health_pb2.HealthCheckRequest(service="docuthinker.nlp.v1.NlpService"))
    assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
    Probe.held, Probe.release = asyncio.Event(), asyncio.Event()
    in_flight = asyncio.ensure_future(stub.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="hold")))
    await asyncio.wait_for(Probe.held.wait(), 30)  # the handler is running: the call is in flight
    stopping = asyncio.ensure_future(running.server.stop(30))
    await asyncio.sleep(0)
    Probe.release.set()
    assert (await asyncio.wait_for(in_flight, 30)).top_keywords[0].keyword == "default"
    await stopping


class Hanging(pb_grpc.NlpServiceServicer):
    """Handlers that wait until the caller gives up."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()

    async def ComputeAnalytics(self, request, context):
        self.entered.set()
        await asyncio.sleep(60)
        return pb.ComputeAnalyticsResponse()

    async def Analyze(self, request, context):
        yield pb.AnalyzeResponse(result=pb.OperationResult(operation=pb.OPERATION_ANALYTICS))
        self.entered.set()
        await asyncio.sleep(60)
        yield pb.AnalyzeResponse()


async def test_a_call_the_client_cancels_leaves_one_log_line(caplog):
    servicer = Hanging()
    running = await create_server(_binding(servicer), MeshSettings(), port=0)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{running.port}")
    stub = pb_grpc.NlpServiceStub(channel)
    try:
        with caplog.at_level("INFO", logger="docuthinker.rpc"):
            unary = stub.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="x"))
            await asyncio.wait_for(servicer.entered.wait(), 10)
            unary.cancel()
            servicer.entered.clear()
            stream = stub.Analyze(pb.AnalyzeRequest(text="x", operations=[pb.OPERATION_ANALYTICS]))
            await stream.read()
            await asyncio.wait_for(servicer.entered.wait(), 10)
            stream.cancel()
            for _ in range(100):  # the server learns of each cancel asynchronously
                lines = [r for r in caplog.records if r.getMessage() == "rpc cancelled by the client"]
                if len(lines) == 2:
                    break
                await asyncio.sleep(0.05)
    finally:
        await channel.close()
        await running.stop(0)
    by_method = {r.fields["method"].rsplit("/", 1)[-1]: r.fields for r in lines}
    assert set(by_method) == {"ComputeAnalytics", "Analyze"}
    assert all(f["code"] == "CANCELLED" for f in by_method.values())
    assert by_method["Analyze"]["sent"] == 1
