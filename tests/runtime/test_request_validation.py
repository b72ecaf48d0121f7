"""Enum numbers no enum defines are refused for every service, before any handler runs."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from docuthinker.nlp.v1 import nlp_service_pb2 as pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from docuthinker.rag.v1 import rag_service_pb2 as rag_pb
from services.runtime import MeshSettings, ServiceBinding, create_server
from services.runtime.errors import InvalidArgument
from services.runtime.request_validation import check_request, unknown_enum_values


def test_defined_values_pass_and_unknown_numbers_are_named() -> None:
    assert unknown_enum_values(pb.SummarizeRequest(text="x", style=pb.SummaryStyle.Value("SUMMARY_STYLE_BULLETS"))) == []
    assert unknown_enum_values(pb.SummarizeRequest(text="x")) == []  # UNSPECIFIED is the default, not an error
    [violation] = unknown_enum_values(pb.SummarizeRequest(text="x", style=42))
    assert violation.field == "style" and violation.description.startswith("42 is not a SummaryStyle: one of")
    repeated = pb.AnalyzeRequest(text="x", operations=[pb.OPERATION_ANALYTICS, 99, 100])
    assert [v.field for v in unknown_enum_values(repeated)] == ["operations"] * 2
    assert unknown_enum_values(rag_pb.SearchRequest(query="q")) == []
    with pytest.raises(InvalidArgument) as caught:
        check_request(pb.SummarizeRequest(text="x", style=42))
    assert caught.value.reason == "UNKNOWN_ENUM_VALUE"


class _Never(pb_grpc.NlpServiceServicer):
    calls = 0

    async def Summarize(self, request, context):
        _Never.calls += 1
        return pb.SummarizeResponse(summary="ran")


async def test_the_server_refuses_before_the_handler() -> None:
    binding = ServiceBinding(name="nlp", full_names=["docuthinker.nlp.v1.NlpService"],
                             register=lambda server: pb_grpc.add_NlpServiceServicer_to_server(_Never(), server))
    running = await create_server(binding, MeshSettings(), port=0)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = pb_grpc.NlpServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.Summarize(pb.SummarizeRequest(text="some text", style=42))
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            info = error_details_pb2.ErrorInfo()
            assert rpc_status.from_call(caught.value).details[0].Unpack(info) and info.reason == "UNKNOWN_ENUM_VALUE"
            assert _Never.calls == 0
            assert (await stub.Summarize(pb.SummarizeRequest(text="some text"))).summary == "ran"
    finally:
        await running.stop(0)
