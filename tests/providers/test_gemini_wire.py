"""The real ``google-genai`` SDK against a local server speaking the Gemini API wire format."""

from __future__ import annotations

import json
import time

import pytest
from payloads import GEMINI_MODEL, HUNG_S
from payloads import gemini_error as error
from payloads import gemini_response as response
from payloads import gemini_usage as usage

from services.providers.base import (
    GenerationRequest,
    Message,
    ProviderError,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from services.providers.gemini_provider import GeminiProvider
from services.providers.pricing import load_price_table

MODEL = GEMINI_MODEL
SEARCH = ToolSpec(
    "search_documents",
    "Search the user's documents.",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


def provider(vendor, model: str = MODEL) -> GeminiProvider:
    return GeminiProvider(api_key="g-test", model=model, prices=load_price_table(), base_url=vendor.base_url, timeout_s=10.0)


async def test_plain_text_maps_content_usage_and_cost(vendor):
    vendor.json(response([{"text": "Revenue grew 12%."}], tokens=usage(1200, 30, cached=1000, thoughts=10)))
    request = GenerationRequest(
        system=[TextBlock("You answer from documents.", cacheable=True)],
        messages=[Message("user", "Growth?")],
        max_tokens=200,
        temperature=0.0,
    )
    result = await provider(vendor).generate(request)

    assert result.text == "Revenue grew 12%."
    assert (result.provider, result.model, result.stop_reason) == ("gemini", MODEL, "end_turn")
    assert result.context_window == 2_000_000
    u = result.usage
    # promptTokenCount includes the cached tokens; thinking tokens are billed as output.
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.prompt_tokens) == (200, 40, 1000, 1200)
    assert u.cost_usd == pytest.approx((1200 * 3.5 + 40 * 10.5) / 1e6)
    sent = vendor.requests[0]
    assert sent.path == f"/v1beta/models/{MODEL}:generateContent"
    assert sent.headers["x-goog-api-key"] == "g-test"
    assert sent.body["systemInstruction"]["parts"] == [{"text": "You answer from documents."}]
    assert sent.body["contents"] == [{"role": "user", "parts": [{"text": "Growth?"}]}]
    assert sent.body["generationConfig"]["maxOutputTokens"] == 200
    assert sent.body["generationConfig"]["temperature"] == 0.0


async def test_function_calls_round_trip(vendor):
    vendor.json(
        response([{"functionCall": {"id": "fc_1", "name": "search_documents", "args": {"query": "revenue"}}}], tokens=usage(50, 8))
    )
    history = [
        Message("user", "What about revenue?"),
        Message("assistant", [ToolUseBlock("fc_0", "search_documents", {"query": "rev"})]),
        Message("user", [ToolResultBlock("fc_0", "nothing found")]),
    ]
    result = await provider(vendor).generate(GenerationRequest(messages=history, tools=[SEARCH]))

    assert result.stop_reason == "tool_use"
    assert result.tool_calls == [ToolUseBlock("fc_1", "search_documents", {"query": "revenue"})]
    body = vendor.requests[0].body
    declaration = body["tools"][0]["functionDeclarations"][0]
    assert declaration["name"] == "search_documents"
    # The SDK writes the proto field name; the API's JSON parser accepts it and the camelCase one.
    schema = declaration.get("parametersJsonSchema", declaration.get("parameters_json_schema"))
    assert schema == dict(SEARCH.input_schema)
    assert body["contents"][1] == {
        "role": "model",
        "parts": [{"functionCall": {"id": "fc_0", "name": "search_documents", "args": {"query": "rev"}}}],
    }
    assert body["contents"][2]["parts"][0]["functionResponse"] == {
        "id": "fc_0",
        "name": "search_documents",
        "response": {"result": "nothing found"},
    }


async def test_a_function_call_without_an_id_gets_one(vendor):
    vendor.json(response([{"functionCall": {"name": "search_documents", "args": {"query": "q"}}}], tokens=usage(5, 2)))
    result = await provider(vendor).generate(GenerationRequest(messages=[Message("user", "q")], tools=[SEARCH]))
    assert result.tool_calls[0].id.startswith("call_") and result.tool_calls[0].input == {"query": "q"}


async def test_streamed_text_function_call_and_usage(vendor):
    vendor.sse(
        [
            (None, response([{"text": "Let me "}], finish=None)),
            (None, response([{"text": "look."}], finish=None)),
            (None, response([{"functionCall": {"name": "search_documents", "args": {"query": "revenue"}}}], tokens=usage(300, 25, cached=256))),
        ]
    )
    request = GenerationRequest(messages=[Message("user", "q")], tools=[SEARCH])
    events = [e async for e in provider(vendor).stream(request)]

    assert [e.text_delta for e in events if e.text_delta] == ["Let me ", "look."]
    calls = [e.tool_use for e in events if e.tool_use]
    assert len(calls) == 1 and calls[0].name == "search_documents" and calls[0].input == {"query": "revenue"}
    final = events[-1].final
    assert final is not None and final.text == "Let me look." and final.tool_calls == calls
    u = final.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens) == (44, 25, 256)
    assert u.cost_usd == pytest.approx((300 * 3.5 + 25 * 10.5) / 1e6)
    sent = vendor.requests[0]
    assert sent.path == f"/v1beta/models/{MODEL}:streamGenerateContent"
    assert sent.query.get("alt") == "sse"


async def test_json_schema_goes_in_the_generation_config(vendor):
    schema = {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}
    vendor.json(response([{"text": '{"label": "positive"}'}], tokens=usage(20, 5)))
    result = await provider(vendor).generate(GenerationRequest(messages=[Message("user", "sentiment?")], json_schema=schema))
    assert json.loads(result.text) == {"label": "positive"}
    config = vendor.requests[0].body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == schema


RETRY_INFO = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}]


@pytest.mark.parametrize(
    ("status", "body", "kind", "retryable", "retry_after"),
    [
        (429, error(429, "RESOURCE_EXHAUSTED", "Quota exceeded", RETRY_INFO), "rate_limited", True, 7.0),
        (500, error(500, "INTERNAL", "internal error"), "provider_down", True, None),
        (503, error(503, "UNAVAILABLE", "The model is overloaded"), "provider_down", True, None),
        (400, error(400, "INVALID_ARGUMENT", "The input token count (2100000) exceeds the maximum number of tokens allowed (2097152)."), "context_overflow", False, None),
        (403, error(403, "PERMISSION_DENIED", "API key not valid"), "auth", False, None),
    ],
)
async def test_http_errors_are_classified(vendor, status, body, kind, retryable, retry_after):
    vendor.json(body, status=status)
    with pytest.raises(ProviderError) as caught:
        await provider(vendor).generate(GenerationRequest(messages=[Message("user", "hi")]))
    e = caught.value
    assert (e.provider, e.kind, e.retryable, e.status_code) == ("gemini", kind, retryable, status)
    assert e.retry_after_s == retry_after
    assert len(vendor.requests) == 1  # HttpRetryOptions(attempts=1)


async def test_retry_after_header_wins_on_429(vendor):
    vendor.json(error(429, "RESOURCE_EXHAUSTED", "Quota exceeded"), status=429, headers={"retry-after": "3"})
    with pytest.raises(ProviderError) as caught:
        await provider(vendor).generate(GenerationRequest(messages=[Message("user", "hi")]))
    assert caught.value.retry_after_s == 3.0


@pytest.mark.parametrize("text", ['{"candidates": [', '{"candidates": [{"content": {"parts": [{"text": "hi"}]}}]}'])
async def test_malformed_bodies_are_bad_responses(vendor, text):
    vendor.raw(text)
    with pytest.raises(ProviderError) as caught:
        await provider(vendor).generate(GenerationRequest(messages=[Message("user", "hi")]))
    assert (caught.value.kind, caught.value.retryable) == ("bad_response", True)


async def test_a_hung_vendor_times_out_at_the_request_deadline(vendor):
    vendor.stall()
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        await provider(vendor).generate(GenerationRequest(messages=[Message("user", "hi")], timeout_s=1.5))
    assert (caught.value.kind, caught.value.retryable) == ("timeout", True)
    assert time.monotonic() - started < HUNG_S / 4  # the stall was cut short
    assert len(vendor.requests) == 1  # it did reach the (hung) vendor
