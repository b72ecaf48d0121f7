"""The crew and analysis RPCs on a real in-process RAG server: requests that fail before any
model runs get their proper status (a stream fails as an RPC, not with an in-band event)."""

from __future__ import annotations

import grpc
import pytest

from docuthinker.rag.v1 import rag_service_pb2 as pb
from docuthinker.rag.v1 import rag_service_pb2_grpc as pb_grpc
from services.rag.service import RagService
from services.runtime import MeshSettings, create_server

pytestmark = pytest.mark.models  # a RagService over the real embedder

META = (("x-tenant-id", "crew-rpc"),)


@pytest.fixture(scope="module")
async def stub(tmp_path_factory):
    settings = MeshSettings(data_dir=tmp_path_factory.mktemp("crew-rpc"))
    running = await create_server(RagService(settings).binding(), settings, port=0)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{running.port}")
    yield pb_grpc.RagServiceStub(channel)
    await channel.close()
    await running.stop(0)


async def test_crew_without_a_source_is_invalid_argument(stub):
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.CrewAnalyze(pb.CrewAnalyzeRequest(question="Risks?"), metadata=META)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_crew_over_an_unknown_document_is_not_found(stub):
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.CrewAnalyze(pb.CrewAnalyzeRequest(document_id="missing"), metadata=META)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


async def test_analysis_with_a_bad_language_is_invalid_argument(stub):
    request = pb.AnalyzeDocumentRequest(text="Some text.", translate_lang="x" * 100)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.AnalyzeDocument(request, metadata=META)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "translate_lang" in caught.value.details()


async def test_a_stream_over_an_unknown_document_fails_before_its_first_event(stub):
    events = []
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for event in stub.StreamAnalyzeDocument(pb.StreamAnalyzeDocumentRequest(document_id="missing"),
                                                      metadata=META):
            events.append(event)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND and events == []
