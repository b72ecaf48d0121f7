"""The chat API's HTTP handlers over a fake rag service at its gRPC boundary, driven by the openai SDK."""

from __future__ import annotations

import grpc
import openai
import pytest
from aiohttp.test_utils import TestServer
from google.rpc import code_pb2, status_pb2

from docuthinker.rag.v1 import answers_pb2
from docuthinker.rag.v1 import rag_service_pb2 as rag_pb
from docuthinker.rag.v1 import rag_service_pb2_grpc as rag_grpc
from services.clients.rag import RagClient
from services.openai_api.answers import AnswerEngine
from services.openai_api.app import create_app

ANSWER = answers_pb2.Answer(
    answer="The inspector is Dana Whitfield [1].", support_status=answers_pb2.SUPPORT_STATUS_SUPPORTED,
    citations=[answers_pb2.Citation(marker=1, document_id="doc-1", filename="memo.txt", excerpt="Dana Whitfield")],
)


class FakeRag(rag_grpc.RagServiceServicer):
    """Answers "fine" questions; a question containing "break" fails mid-stream, one with "refuse" at once."""

    def __init__(self) -> None:
        self.tenants: list[str] = []
        self.questions: list[str] = []

    async def Query(self, request, context):
        self.tenants.append(dict(context.invocation_metadata()).get("x-tenant-id", ""))
        self.questions.append(request.question)
        if "refuse" in request.question:
            await context.abort(grpc.StatusCode.NOT_FOUND, "document nope not found")
        return rag_pb.QueryResponse(answer=ANSWER)

    async def StreamQuery(self, request, context):
        self.tenants.append(dict(context.invocation_metadata()).get("x-tenant-id", ""))
        self.questions.append(request.question)
        if "refuse" in request.question:
            await context.abort(grpc.StatusCode.NOT_FOUND, "document nope not found")
        yield rag_pb.StreamQueryResponse(answer_delta="The inspector is ")
        if "break" in request.question:
            yield rag_pb.StreamQueryResponse(error=status_pb2.Status(code=code_pb2.UNAVAILABLE, message="nlp down"))
            return
        yield rag_pb.StreamQueryResponse(answer_delta="Dana Whitfield [1].")
        yield rag_pb.StreamQueryResponse(done=ANSWER)


@pytest.fixture
async def sdk():
    rag = FakeRag()
    server = grpc.aio.server()
    rag_grpc.add_RagServiceServicer_to_server(rag, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    http = TestServer(create_app(AnswerEngine(RagClient(channel)), "default"), host="127.0.0.1")
    await http.start_server()
    client = openai.AsyncOpenAI(base_url=str(http.make_url("/v1")), api_key="x", max_retries=0,
                                default_headers={"x-tenant-id": "acme"})
    try:
        yield client, rag
    finally:
        await client.close()
        await http.close()
        await channel.close()
        await server.stop(0)


def _ask(question: str) -> list[dict]:
    return [{"role": "user", "content": question}]


async def test_completion_carries_the_answer_the_citations_and_the_tenant(sdk):
    client, rag = sdk
    completion = await client.chat.completions.create(model="docuthinker", messages=_ask("fine?"))
    assert completion.choices[0].message.content == ANSWER.answer
    assert completion.choices[0].message.citations[0]["filename"] == "memo.txt"
    assert rag.tenants == ["acme"]


async def test_a_stream_failing_midway_raises_in_the_sdk_after_the_first_delta(sdk):
    client, _ = sdk
    stream = await client.chat.completions.create(model="docuthinker", messages=_ask("break?"), stream=True)
    seen = []
    with pytest.raises(openai.APIError) as caught:
        async for chunk in stream:
            seen.append(chunk.choices[0].delta.content if chunk.choices else None)
    assert "The inspector is " in seen and "nlp down" in str(caught.value)


async def test_a_refusal_before_the_first_event_keeps_its_http_status(sdk):
    client, _ = sdk
    for stream in (False, True):
        with pytest.raises(openai.NotFoundError) as caught:
            await client.chat.completions.create(model="docuthinker", messages=_ask("refuse"), stream=stream)
        assert caught.value.body["type"] == "not_found_error" and "nope" in caught.value.body["message"]


async def test_streamed_text_ends_with_citations_then_done(sdk):
    client, _ = sdk
    stream = await client.chat.completions.create(model="docuthinker", messages=_ask("fine?"), stream=True)
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == ANSWER.answer
    assert chunks[-1].choices[0].finish_reason == "stop" and chunks[-1].choices[0].delta.citations[0]["marker"] == 1


async def test_a_follow_up_is_asked_as_resolved_from_the_message_history(sdk):
    client, rag = sdk
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Who inspects the north pier?"},
                {"role": "assistant", "content": "The inspector is Dana Whitfield [1]."},
                {"role": "user", "content": "When does she inspect it?"}]
    completion = await client.chat.completions.create(model="docuthinker", messages=messages)
    assert rag.questions == ["When does Dana Whitfield inspect the north pier?"]
    assert completion.model_extra["resolved_question"] == rag.questions[0]
    stream = await client.chat.completions.create(model="docuthinker", messages=messages, stream=True)
    async for _ in stream:
        pass
    assert rag.questions[-1] == "When does Dana Whitfield inspect the north pier?"


async def test_usage_is_counted_when_the_engine_reports_none(sdk):
    client, _ = sdk
    question = "Who inspects the north pier? " * 10
    completion = await client.chat.completions.create(model="docuthinker", messages=_ask(question))
    usage = completion.usage
    assert usage.prompt_tokens >= len(question) // 4 and usage.completion_tokens == -(-len(ANSWER.answer) // 4)
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    chunks = [c async for c in await client.chat.completions.create(
        model="docuthinker", messages=_ask(question), stream=True, stream_options={"include_usage": True})]
    assert chunks[-1].usage.total_tokens == usage.total_tokens
