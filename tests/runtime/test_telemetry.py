"""Metrics and traces of the shared runtime, over real in-process aio servers, channels and an OTLP receiver."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
import urllib.request

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from prometheus_client import REGISTRY

from docuthinker.nlp.v1 import nlp_service_pb2 as pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from services.rag.graph_sync.outbox import GraphOutbox
from services.runtime import MeshSettings, ServiceBinding, create_server, open_channel, tracing
from services.runtime.errors import InvalidArgument
from services.runtime.logs import JsonFormatter
from services.runtime.metrics import start_metrics_server
from tests.observability.otlp_receiver import OtlpReceiver

SERVER, CLIENT = 2, 3
METHOD = "docuthinker.nlp.v1.NlpService/"


class Probe(pb_grpc.NlpServiceServicer):
    async def ComputeAnalytics(self, request, context):
        logging.getLogger("probe").info("inside")
        return pb.ComputeAnalyticsResponse(characters=len(request.text))

    async def ExtractEntities(self, request, context):
        raise InvalidArgument("bad labels", reason="BAD_LABELS")

    async def AnalyzeSentiment(self, request, context):
        raise RuntimeError("secret internal detail")

    async def Analyze(self, request, context):
        yield pb.AnalyzeResponse(result=pb.OperationResult(operation=pb.OPERATION_ANALYTICS))


class Relay(pb_grpc.NlpServiceServicer):
    """Calls the probe the way services call each other (through ``open_channel``)."""

    def __init__(self, target: str) -> None:
        self._target = target

    async def ComputeAnalytics(self, request, context):
        async with open_channel(self._target, MeshSettings()) as channel:
            return await pb_grpc.NlpServiceStub(channel).ComputeAnalytics(request)

    async def Analyze(self, request, context):
        async with open_channel(self._target, MeshSettings()) as channel:
            async for reply in pb_grpc.NlpServiceStub(channel).Analyze(request):
                yield reply


def _binding(name: str, servicer) -> ServiceBinding:
    return ServiceBinding(name=name, full_names=["docuthinker.nlp.v1.NlpService"],
                          register=lambda server: pb_grpc.add_NlpServiceServicer_to_server(servicer, server))


@pytest.fixture
async def mesh_pair():
    """A probe server ("nlp") and a relay server ("relay") that calls it."""
    probe = await create_server(_binding("nlp", Probe()), MeshSettings(), port=0)
    relay = await create_server(_binding("relay", Relay(f"127.0.0.1:{probe.port}")), MeshSettings(), port=0)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{relay.port}")
    probe_channel = grpc.aio.insecure_channel(f"127.0.0.1:{probe.port}")
    yield pb_grpc.NlpServiceStub(channel), pb_grpc.NlpServiceStub(probe_channel)
    await channel.close()
    await probe_channel.close()
    await relay.stop(0)
    await probe.stop(0)


@pytest.fixture
def receiver():
    running = OtlpReceiver().start()
    tracing.configure("test", running.endpoint, export_delay_ms=50)
    yield running
    tracing.shutdown()
    running.stop()


def sample(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_server_and_client_interceptors_count_rpcs_by_code_and_time_them(mesh_pair):
    relay, probe = mesh_pair
    ok = dict(service="nlp", method=METHOD + "ComputeAnalytics", code="OK")
    bad = dict(service="nlp", method=METHOD + "ExtractEntities", code="INVALID_ARGUMENT")
    internal = dict(service="nlp", method=METHOD + "AnalyzeSentiment", code="INTERNAL")
    client_ok = dict(service="client", method=METHOD + "ComputeAnalytics", code="OK")
    client_stream = dict(service="client", method=METHOD + "Analyze", code="OK")
    before = {k: sample("docuthinker_rpc_server_handled_total", **v) for k, v in
              {"ok": ok, "bad": bad, "internal": internal}.items()}
    before_client = sample("docuthinker_rpc_client_handled_total", **client_ok)
    before_stream = sample("docuthinker_rpc_client_handled_total", **client_stream)
    latency_before = sample("docuthinker_rpc_server_duration_seconds_count", service="nlp",
                            method=METHOD + "ComputeAnalytics")

    for _ in range(3):
        await relay.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="abc"))
    replies = [r async for r in relay.Analyze(pb.AnalyzeRequest(text="x"))]
    assert len(replies) == 1
    for call in (probe.ExtractEntities(pb.ExtractEntitiesRequest(text="x")),
                 probe.AnalyzeSentiment(pb.AnalyzeSentimentRequest(text="x"))):
        with pytest.raises(grpc.aio.AioRpcError):
            await call
    # A stream's client metrics are recorded from its done callback, and its server handler ends after
    # its last message reached the client: both are awaited (a deadline, not a guess at how long they take).
    deadline = time.monotonic() + 30
    while not (sample("docuthinker_rpc_client_handled_total", **client_stream) > before_stream
               and sample("docuthinker_rpc_server_in_flight", service="nlp") == 0):
        assert time.monotonic() < deadline, "the stream's metrics were not recorded within 30 s"
        await asyncio.sleep(0.02)

    assert sample("docuthinker_rpc_server_handled_total", **ok) - before["ok"] == 3
    assert sample("docuthinker_rpc_server_handled_total", **bad) - before["bad"] == 1
    assert sample("docuthinker_rpc_server_handled_total", **internal) - before["internal"] == 1
    assert sample("docuthinker_rpc_server_duration_seconds_count", service="nlp",
                  method=METHOD + "ComputeAnalytics") - latency_before == 3
    # The relay's calls to the probe, seen from the calling side (this process's name is not set: "client").
    assert sample("docuthinker_rpc_client_handled_total", **client_ok) - before_client == 3
    assert sample("docuthinker_rpc_client_handled_total", **client_stream) - before_stream == 1
    assert sample("docuthinker_rpc_server_in_flight", service="nlp") == 0


def test_metrics_port_serves_the_prometheus_text_format():
    port = start_metrics_server("nlp", "127.0.0.1", 0)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        body = reply.read().decode()
    assert "# TYPE docuthinker_rpc_server_handled_total counter" in body
    assert 'docuthinker_service_info{service="nlp"} 1.0' in body


async def test_a_call_continues_the_callers_trace_across_services(mesh_pair, receiver):
    relay, _ = mesh_pair
    trace_id, parent = os.urandom(16).hex(), os.urandom(8).hex()
    await relay.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="abc"),
                                 metadata=(("traceparent", f"00-{trace_id}-{parent}-01"),))
    spans = receiver.wait_for(lambda s: len([x for x in s if x.trace_id == trace_id]) >= 3, timeout_s=30)
    mine = {s.kind: s for s in spans if s.trace_id == trace_id and s.name == METHOD + "ComputeAnalytics"
            and s.parent_span_id == parent}
    relay_server = mine[SERVER]
    client = [s for s in spans if s.trace_id == trace_id and s.kind == CLIENT]
    assert len(client) == 1 and client[0].parent_span_id == relay_server.span_id
    probe_server = [s for s in spans if s.trace_id == trace_id and s.kind == SERVER and s is not relay_server]
    assert len(probe_server) == 1 and probe_server[0].parent_span_id == client[0].span_id
    assert probe_server[0].attributes["rpc.grpc.status_code"] == "OK"
    assert probe_server[0].attributes["rpc.method"] == "ComputeAnalytics"


async def test_error_info_carries_the_trace_id_only_when_tracing(mesh_pair, receiver):
    _, probe = mesh_pair
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await probe.AnalyzeSentiment(pb.AnalyzeSentimentRequest(text="x"))
    info = error_details_pb2.ErrorInfo()
    assert rpc_status.from_call(caught.value).details[0].Unpack(info)
    assert info.reason == "INTERNAL" and len(info.metadata["trace_id"]) == 32
    receiver.wait_for(lambda s: any(x.trace_id == info.metadata["trace_id"] and x.status_code == 2 for x in s))
    tracing.shutdown()
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await probe.ExtractEntities(pb.ExtractEntitiesRequest(text="x"))
    assert rpc_status.from_call(caught.value).details[0].Unpack(info)
    assert info.reason == "BAD_LABELS" and "trace_id" not in info.metadata


def test_json_logs_carry_the_trace_id_inside_a_span(receiver):
    formatter = JsonFormatter("nlp")
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello", None, None)
    assert "trace_id" not in json.loads(formatter.format(record))
    with tracing.stage("work") as span:
        entry = json.loads(formatter.format(record))
    assert entry["trace_id"] == format(span.get_span_context().trace_id, "032x")
    assert entry["span_id"] == format(span.get_span_context().span_id, "016x")


def test_outbox_keeps_the_trace_and_the_worker_span_continues_it(tmp_path, receiver):
    outbox = GraphOutbox(tmp_path / "meta.db")
    with tracing.stage("upload") as upload:
        outbox.enqueue_upsert("acme", "doc-1")
    outbox.enqueue_upsert("acme", "doc-2")  # no trace then
    entry, untraced = outbox.get("acme", "doc-1"), outbox.get("acme", "doc-2")
    upload_ids = (format(upload.get_span_context().trace_id, "032x"), format(upload.get_span_context().span_id, "016x"))
    assert entry.trace_context.startswith(f"00-{upload_ids[0]}-{upload_ids[1]}-")  # sampled flags
    assert untraced.trace_context is None
    with tracing.background("graph_sync.upsert", entry.trace_context):
        pass
    spans = receiver.wait_for(lambda s: any(x.name == "graph_sync.upsert" for x in s))
    sync = [s for s in spans if s.name == "graph_sync.upsert"][0]
    assert (sync.trace_id, sync.parent_span_id) == upload_ids and upload_ids in sync.links
    outbox.close()


def test_outbox_from_before_tracing_gains_the_column(tmp_path):
    import sqlite3

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.executescript("""CREATE TABLE graph_outbox (tenant TEXT NOT NULL, document_id TEXT NOT NULL,
            operation TEXT NOT NULL, sequence INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT NOT NULL DEFAULT '', facts TEXT, enqueue_time REAL NOT NULL,
            next_attempt_time REAL NOT NULL, PRIMARY KEY (tenant, document_id));
            INSERT INTO graph_outbox VALUES ('t', 'd', 'upsert', 1, 0, '', NULL, 1.0, 1.0);""")
    outbox = GraphOutbox(path)
    assert outbox.get("t", "d").trace_context is None
    outbox.enqueue_upsert("t", "e")
    assert outbox.depth() == (2, 1.0)
    outbox.close()
