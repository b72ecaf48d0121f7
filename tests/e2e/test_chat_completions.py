"""The OpenAI-compatible chat API through the real Envoy against the real mesh, driven by the official openai SDK."""

from __future__ import annotations

import httpx
import openai
import pytest

pytestmark = pytest.mark.e2e

TENANT = "chat-e2e"
MEMO = (
    "Harbor Street warehouse: facilities memo.\n\n"
    "The Harbor Street warehouse opened in 1998 and stores spare turbine parts for the northern wind farms. "
    "Its annual fire inspection is scheduled for 14 March 2027 and will be carried out by inspector Dana Whitfield. "
    "The loading dock was resurfaced last autumn after two forklifts were damaged. "
    "Staff badges are renewed every January by the security office."
)
QUESTION = "Who will carry out the fire inspection of the Harbor Street warehouse?"


@pytest.fixture(scope="module")
def document_id(mesh) -> str:
    with mesh.http(timeout=180) as http:
        reply = http.post("/v1/documents:ingest", params={"filename": "harbor-memo.txt"},
                          content=MEMO.encode(), headers={"Content-Type": "text/plain", "x-tenant-id": TENANT})
    assert reply.status_code == 200, reply.text
    return reply.json()["result"]["document"]["document_id"]


@pytest.fixture(scope="module")
def client(mesh) -> openai.OpenAI:
    # The SDK's api_key is the bearer token: the tenant comes from it.
    with openai.OpenAI(base_url=f"{mesh.base_url}/v1", api_key=mesh.mint(TENANT), max_retries=0, timeout=180) as sdk:
        yield sdk


def test_models_lists_the_answer_engines(client):
    ids = [model.id for model in client.models.list()]
    assert ids == ["docuthinker", "docuthinker-agent"]


def test_completion_answers_from_the_library_with_citations(client, document_id):
    completion = client.chat.completions.create(
        model="docuthinker", messages=[{"role": "system", "content": "Answer from my documents."},
                                       {"role": "user", "content": QUESTION}])
    assert completion.object == "chat.completion" and completion.model == "docuthinker"
    choice = completion.choices[0]
    assert choice.finish_reason == "stop" and choice.message.role == "assistant"
    assert "Dana Whitfield" in choice.message.content and "[1]" in choice.message.content
    citations = choice.message.citations  # the extra field, kept by the SDK's models
    assert citations[0]["marker"] == 1 and citations[0]["document_id"] == document_id
    assert citations[0]["filename"] == "harbor-memo.txt" and citations[0]["excerpt"] in MEMO
    assert completion.support_status == "SUPPORT_STATUS_SUPPORTED"
    assert completion.usage is not None and completion.usage.total_tokens >= 0


def test_streamed_completion_matches_and_ends_with_citations_and_usage(client, document_id):
    whole = client.chat.completions.create(model="docuthinker", messages=[{"role": "user", "content": QUESTION}])
    chunks = list(client.chat.completions.create(
        model="docuthinker", messages=[{"role": "user", "content": QUESTION}], stream=True,
        stream_options={"include_usage": True}))
    assert all(c.object == "chat.completion.chunk" for c in chunks) and len({c.id for c in chunks}) == 1
    with_choices = [c for c in chunks if c.choices]
    assert with_choices[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in with_choices)
    assert text == whole.choices[0].message.content
    last = with_choices[-1]
    assert last.choices[0].finish_reason == "stop"
    assert [c["marker"] for c in last.choices[0].delta.citations] == [
        c["marker"] for c in whole.choices[0].message.citations]
    assert not chunks[-1].choices and chunks[-1].usage is not None


def test_answers_stay_within_the_callers_tenant(mesh, document_id):
    with openai.OpenAI(base_url=f"{mesh.base_url}/v1", api_key=mesh.mint("chat-e2e-other"), max_retries=0,
                       timeout=180) as other:
        completion = other.chat.completions.create(model="docuthinker",
                                                   messages=[{"role": "user", "content": QUESTION}])
    message = completion.choices[0].message
    assert "Dana Whitfield" not in message.content and message.citations == []


def test_errors_come_in_openais_shape_with_their_status(client, mesh, open_gateway):
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    assert unknown.value.status_code == 404 and unknown.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as no_question:
        client.chat.completions.create(model="docuthinker", messages=[{"role": "system", "content": "hi"}])
    assert no_question.value.body["param"] == "messages"
    # With auth off, x-tenant-id names the tenant, and a malformed one is refused.
    with openai.OpenAI(base_url=f"{open_gateway}/v1", api_key="unused-without-auth", max_retries=0,
                       timeout=60) as open_sdk, pytest.raises(openai.BadRequestError) as bad_tenant:
        open_sdk.chat.completions.create(model="docuthinker", messages=[{"role": "user", "content": QUESTION}],
                                         extra_headers={"x-tenant-id": "bad tenant!"}, stream=True)
    assert bad_tenant.value.code == "invalid_tenant"
    raw = httpx.post(f"{mesh.base_url}/v1/chat/completions", content=b"{not json", timeout=30,
                     headers={"authorization": f"Bearer {mesh.mint(TENANT)}"})
    assert raw.status_code == 400 and raw.json()["error"]["type"] == "invalid_request_error"


def test_the_agent_model_answers_through_the_agent_graph(client, document_id):
    completion = client.chat.completions.create(model="docuthinker-agent",
                                                messages=[{"role": "user", "content": QUESTION}])
    message = completion.choices[0].message
    assert "Dana Whitfield" in message.content and message.citations[0]["document_id"] == document_id
    streamed = list(client.chat.completions.create(model="docuthinker-agent", stream=True,
                                                   messages=[{"role": "user", "content": QUESTION}]))
    assert "Dana Whitfield" in "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
