"""The interceptor chain over real in-process aio servers and channels: unary and streaming calls end alike,
every concern's cleanup runs when a stream ends early, and client concerns run in order and hear the status."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from typing import Any

import grpc
import pytest
from prometheus_client import REGISTRY

from docuthinker.nlp.v1 import nlp_service_pb2 as pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from services.runtime import MeshSettings, ServiceBinding, create_server, request_context
from services.runtime.errors import NotFound
from services.runtime.interceptors import (
    Inbound,
    OutgoingCall,
    RequestScope,
    ServerCall,
    client_interceptors,
    server_interceptor,
)
from services.runtime.interceptors.server import Messages

SERVICE = "chain-probe"
METHOD = "/docuthinker.nlp.v1.NlpService/"


async def _outcome(text: str, context: grpc.aio.ServicerContext) -> None:
    """Ends the call as ``text`` says, before any response."""
    if text == "domain":
        raise NotFound("no such document", reason="DOCUMENT_NOT_FOUND")
    if text == "unexpected":
        raise RuntimeError("secret internal detail")
    if text == "abort":
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, "not yours")
    if text == "unimplemented":
        raise NotImplementedError


class Outcomes(pb_grpc.NlpServiceServicer):
    """One outcome, by the request's text, for a unary method and a server-streaming one alike."""

    async def ComputeAnalytics(self, request, context):
        await _outcome(request.text, context)
        return pb.ComputeAnalyticsResponse(words=1)

    async def Analyze(self, request, context):
        await _outcome(request.text, context)
        yield pb.AnalyzeResponse(result=pb.OperationResult(operation=pb.OPERATION_ANALYTICS))


@pytest.fixture
async def outcomes():
    binding = ServiceBinding(name=SERVICE, full_names=["docuthinker.nlp.v1.NlpService"],
                             register=lambda server: pb_grpc.add_NlpServiceServicer_to_server(Outcomes(), server))
    running = await create_server(binding, MeshSettings(), port=0)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{running.port}")
    yield pb_grpc.NlpServiceStub(channel)
    await channel.close()
    await running.stop(0)


def _handled(method: str, code: str) -> float:
    labels = {"service": SERVICE, "method": METHOD.lstrip("/") + method, "code": code}
    return REGISTRY.get_sample_value("docuthinker_rpc_server_handled_total", labels) or 0.0


@pytest.mark.parametrize(("text", "metadata", "code", "level"), [
    ("ok", (), "OK", logging.INFO),
    ("domain", (), "NOT_FOUND", logging.INFO),
    ("unexpected", (), "INTERNAL", logging.ERROR),
    ("abort", (), "ABORTED_BY_HANDLER", logging.INFO),
    ("unimplemented", (), "UNIMPLEMENTED", logging.INFO),
    ("ok", (("x-tenant-id", "not a tenant!"),), "INVALID_ARGUMENT", logging.INFO),
])
async def test_a_unary_and_a_streaming_call_that_end_alike_are_logged_and_counted_alike(
        outcomes, caplog, text, metadata, code, level):
    seen: dict[str, tuple[grpc.StatusCode, logging.LogRecord]] = {}
    for method, call in (
        ("ComputeAnalytics", lambda: outcomes.ComputeAnalytics(pb.ComputeAnalyticsRequest(text=text), metadata=metadata)),
        ("Analyze", lambda: _drain(outcomes.Analyze(
            pb.AnalyzeRequest(text=text, operations=[pb.OPERATION_ANALYTICS]), metadata=metadata))),
    ):
        before = _handled(method, code)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="docuthinker.rpc"):
            try:
                await call()
                status = grpc.StatusCode.OK
            except grpc.aio.AioRpcError as exc:
                status = exc.code()
        lines = [r for r in caplog.records if r.name == "docuthinker.rpc"]
        assert len(lines) == 1, f"{method}: one log line per RPC, got {[r.getMessage() for r in lines]}"
        assert _handled(method, code) == before + 1, f"{method} counted under {code}"
        seen[method] = status, lines[0]
    (unary_status, unary_line), (stream_status, stream_line) = seen["ComputeAnalytics"], seen["Analyze"]
    assert unary_status == stream_status
    assert unary_line.fields["code"] == stream_line.fields["code"] == code
    assert unary_line.levelno == stream_line.levelno == level
    assert unary_line.getMessage() == stream_line.getMessage()
    assert (unary_line.exc_info is None) == (stream_line.exc_info is None) == (level != logging.ERROR)
    assert set(stream_line.fields) - set(unary_line.fields) == {"sent"}, "a stream adds only its message count"


async def _drain(call) -> None:
    async for _ in call:
        pass


class Recorder(Inbound):
    """Notes when the chain enters and leaves it, and the request context the call had then."""

    def __init__(self, inner: Inbound, name: str, events: list[str]) -> None:
        super().__init__(inner)
        self._name, self._events = name, events

    async def stream(self, call: ServerCall, request: Any) -> Messages:
        self._events.append(f"enter {self._name}")
        try:
            async with contextlib.aclosing(self.inner.stream(call, request)) as messages:
                async for message in messages:
                    yield message
        finally:
            ctx = request_context.current()
            self._events.append(f"leave {self._name} tenant={ctx.tenant if ctx else None}")


class Endless(pb_grpc.NlpServiceServicer):
    def __init__(self, events: list[str]) -> None:
        self.events = events

    async def Analyze(self, request, context):
        try:
            while True:
                yield pb.AnalyzeResponse(result=pb.OperationResult(operation=pb.OPERATION_ANALYTICS))
                await asyncio.sleep(0.01)
        finally:
            self.events.append(f"leave handler tenant={request_context.current().tenant}")


async def test_a_stream_the_client_cancels_runs_every_concerns_cleanup_innermost_first():
    events: list[str] = []
    server = grpc.aio.server(interceptors=[server_interceptor(SERVICE, [
        functools.partial(Recorder, name="outer", events=events),
        functools.partial(RequestScope, default_tenant="acme"),
        functools.partial(Recorder, name="inner", events=events),
    ])])
    pb_grpc.add_NlpServiceServicer_to_server(Endless(events), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = pb_grpc.NlpServiceStub(channel).Analyze(pb.AnalyzeRequest(text="x"))
            for _ in range(3):
                await call.read()
            call.cancel()
        for _ in range(200):  # the server learns of the cancel asynchronously
            if len(events) == 5:
                break
            await asyncio.sleep(0.025)
    finally:
        await server.stop(0)
    assert events == ["enter outer", "enter inner", "leave handler tenant=acme", "leave inner tenant=acme",
                      "leave outer tenant=None"], "each concern's cleanup ran, innermost first, in the call's scope"


class Tag:
    """A client concern: adds ``x-tag: <name>`` (keeping any earlier one) and hears the status."""

    def __init__(self, name: str, heard: list[tuple[str, str, grpc.StatusCode]]) -> None:
        self._name, self._heard = name, heard

    def begin(self, call: OutgoingCall):
        call.metadata.add("x-tag", self._name)
        method = call.method.rsplit("/", 1)[-1]
        return lambda code: self._heard.append((self._name, method, code))


class Headers(pb_grpc.NlpServiceServicer):
    async def ComputeAnalytics(self, request, context):
        tags = [v for k, v in context.invocation_metadata() if k == "x-tag"]
        return pb.ComputeAnalyticsResponse(top_keywords=[pb.KeywordCount(keyword=t) for t in tags])

    async def Analyze(self, request, context):
        yield pb.AnalyzeResponse(result=pb.OperationResult(operation=pb.OPERATION_ANALYTICS))
        await context.abort(grpc.StatusCode.NOT_FOUND, "gone")


async def test_client_concerns_run_in_order_on_every_kind_of_call_and_hear_its_status():
    heard: list[tuple[str, str, grpc.StatusCode]] = []
    server = grpc.aio.server()
    pb_grpc.add_NlpServiceServicer_to_server(Headers(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        interceptors = client_interceptors([Tag("first", heard), Tag("second", heard)])
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", interceptors=interceptors) as channel:
            stub = pb_grpc.NlpServiceStub(channel)
            reply = await stub.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="x"))
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await _drain(stub.Analyze(pb.AnalyzeRequest(text="x")))
            for _ in range(100):  # a stream's status is read in a task after it ends
                if len(heard) == 4:
                    break
                await asyncio.sleep(0.02)
    finally:
        await server.stop(0)
    assert [k.keyword for k in reply.top_keywords] == ["first", "second"]
    assert failed.value.code() == grpc.StatusCode.NOT_FOUND
    assert sorted(heard) == sorted([("first", "ComputeAnalytics", grpc.StatusCode.OK),
                                    ("second", "ComputeAnalytics", grpc.StatusCode.OK),
                                    ("first", "Analyze", grpc.StatusCode.NOT_FOUND),
                                    ("second", "Analyze", grpc.StatusCode.NOT_FOUND)])
    assert client_interceptors([]) == [], "a channel with no concerns gets no interceptors"
