"""The real ``openai`` SDK against a local server speaking the Chat Completions wire format."""

from __future__ import annotations

import json
import time

import pytest
from payloads import HUNG_S, OPENAI_MODEL
from payloads import openai_chunk as chunk
from payloads import openai_completion as completion
from payloads import openai_usage as usage

from services.providers.base import (
    GenerationRequest,
    Message,
    ProviderError,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from services.providers.openai_provider import OpenAIProvider
from services.providers.pricing import load_price_table

MODEL = OPENAI_MODEL
SEARCH = ToolSpec(
    "search_documents",
    "Search the user's documents.",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


def provider(vendor, path: str = "/v1", model: str = MODEL) -> OpenAIProvider:
    return OpenAIProvider(
        api_key="sk-test", model=model, prices=load_price_table(), base_url=vendor.base_url + path, timeout_s=10.0
    )


async def test_plain_text_maps_content_usage_and_cost(vendor):
    vendor.json(completion({"content": "Revenue grew 12%."}, tokens=usage(1200, 30, cached=1024)))
    request = GenerationRequest(
        system=[TextBlock("You answer from documents.", cacheable=True)],
        messages=[Message("user", "Growth?")],
        max_tokens=200,
        temperature=0.0,
    )
    result = await provider(vendor).generate(request)

    assert result.text == "Revenue grew 12%."
    assert (result.provider, result.model, result.stop_reason) == ("openai", MODEL, "end_turn")
    u = result.usage
    # prompt_tokens includes the cached ones: billed input is the rest.
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.prompt_tokens) == (176, 30, 1024, 1200)
    assert u.cost_usd == pytest.approx((1200 * 0.15 + 30 * 0.6) / 1e6)  # no cache discount in the seed table
    sent = vendor.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.body["messages"] == [
        {"role": "system", "content": "You answer from documents."},
        {"role": "user", "content": "Growth?"},
    ]
    assert sent.body["max_tokens"] == 200  # a local server stands in for OpenAI: compatible field


def test_the_official_api_gets_max_completion_tokens():
    prices = load_price_table()
    assert OpenAIProvider(api_key="k", model=MODEL, prices=prices).max_tokens_field == "max_completion_tokens"
    official = OpenAIProvider(api_key="k", model=MODEL, prices=prices, base_url="https://api.openai.com/v1")
    assert official.max_tokens_field == "max_completion_tokens"
    vllm = OpenAIProvider(api_key="k", model=MODEL, prices=prices, base_url="http://10.0.0.5:8000/v1")
    assert vllm.max_tokens_field == "max_tokens"


async def test_tool_calls_round_trip(vendor):
    vendor.json(
        completion(
            {
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "search_documents", "arguments": '{"query": "revenue"}'},
                    }
                ],
            },
            finish="tool_calls",
        )
    )
    history = [
        Message("user", "What about revenue?"),
        Message("assistant", [TextBlock("Searching."), ToolUseBlock("call_0", "search_documents", {"query": "rev"})]),
        Message("user", [ToolResultBlock("call_0", "nothing found")]),
    ]
    result = await provider(vendor).generate(GenerationRequest(messages=history, tools=[SEARCH]))

    assert result.stop_reason == "tool_use"
    assert result.tool_calls == [ToolUseBlock("call_1", "search_documents", {"query": "revenue"})]
    body = vendor.requests[0].body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "search_documents",
                "description": "Search the user's documents.",
                "parameters": dict(SEARCH.input_schema),
            },
        }
    ]
    assert body["messages"][1] == {
        "role": "assistant",
        "content": "Searching.",
        "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "search_documents", "arguments": '{"query": "rev"}'}}
        ],
    }
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "call_0", "content": "nothing found"}


async def test_streamed_text_tool_call_deltas_and_usage_chunk(vendor):
    vendor.sse(
        [
            (None, chunk({"role": "assistant", "content": ""})),
            (None, chunk({"content": "Let me "})),
            (None, chunk({"content": "look."})),
            (
                None,
                chunk(
                    {
                        "tool_calls": [
                            {"index": 0, "id": "call_7", "type": "function", "function": {"name": "search_documents", "arguments": ""}}
                        ]
                    }
                ),
            ),
            (None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"query": '}}]})),
            (None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"revenue"}'}}]})),
            (None, chunk({}, finish="tool_calls")),
            (None, chunk(None, tokens=usage(300, 25, cached=256))),
            (None, "[DONE]"),
        ]
    )
    events = [e async for e in provider(vendor).stream(GenerationRequest(messages=[Message("user", "q")], tools=[SEARCH]))]

    assert [e.text_delta for e in events if e.text_delta] == ["Let me ", "look."]
    assert [e.tool_use for e in events if e.tool_use] == [ToolUseBlock("call_7", "search_documents", {"query": "revenue"})]
    final = events[-1].final
    assert final is not None and final.text == "Let me look." and final.stop_reason == "tool_use"
    u = final.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens) == (44, 25, 256)
    assert u.cost_usd == pytest.approx((300 * 0.15 + 25 * 0.6) / 1e6)
    body = vendor.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


async def test_json_schema_goes_in_response_format(vendor):
    schema = {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}
    vendor.json(completion({"content": '{"label": "positive"}'}))
    result = await provider(vendor).generate(GenerationRequest(messages=[Message("user", "sentiment?")], json_schema=schema))
    assert json.loads(result.text) == {"label": "positive"}
    assert vendor.requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema, "strict": False},
    }


async def test_an_openai_compatible_server_under_another_path(vendor):
    """vLLM / Ollama / llama.cpp style: custom base URL path, own model name, max_tokens field."""
    vendor.json(completion({"content": "hello from vllm"}, model="Qwen/Qwen2.5-7B-Instruct", tokens=usage(10, 4)))
    result = await provider(vendor, path="/custom/v1", model="Qwen/Qwen2.5-7B-Instruct").generate(
        GenerationRequest(messages=[Message("user", "hi")], max_tokens=16)
    )
    assert result.text == "hello from vllm" and result.model == "Qwen/Qwen2.5-7B-Instruct"
    # Unknown model: the "unknown" price row (1 / 3 $ per 1M).
    assert result.usage.cost_usd == pytest.approx((10 * 1 + 4 * 3) / 1e6)
    sent = vendor.requests[0]
    assert sent.path == "/custom/v1/chat/completions"
    assert sent.body["max_tokens"] == 16 and "max_completion_tokens" not in sent.body


@pytest.mark.parametrize(
    ("status", "body", "headers", "kind", "retryable", "retry_after"),
    [
        (429, {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}, {"retry-after-ms": "1500"}, "rate_limited", True, 1.5),
        (429, {"error": {"message": "Rate limit reached", "type": "tokens"}}, {"retry-after": "20"}, "rate_limited", True, 20.0),
        (500, {"error": {"message": "server error", "type": "server_error"}}, {}, "provider_down", True, None),
        (503, {"error": {"message": "overloaded", "type": "server_error"}}, {}, "provider_down", True, None),
        (400, {"error": {"message": "This model's maximum context length is 128000 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}, {}, "context_overflow", False, None),
        (401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}, {}, "auth", False, None),
        (404, {"error": {"message": "The model does not exist", "type": "invalid_request_error", "code": "model_not_found"}}, {}, "invalid_request", False, None),
    ],
)
async def test_http_errors_are_classified(vendor, status, body, headers, kind, retryable, retry_after):
    vendor.json(body, status=status, headers=headers)
    with pytest.raises(ProviderError) as caught:
        await provider(vendor).generate(GenerationRequest(messages=[Message("user", "hi")]))
    error = caught.value
    assert (error.provider, error.kind, error.retryable, error.status_code) == ("openai", kind, retryable, status)
    assert error.retry_after_s == retry_after
    assert len(vendor.requests) == 1  # max_retries=0


@pytest.mark.parametrize("text", ['{"id": "chatcmpl-1", "choices": [', '{"id": "chatcmpl-1", "object": "chat.completion"}'])
async def test_malformed_bodies_are_bad_responses(vendor, text):
    vendor.raw(text)
    with pytest.raises(ProviderError) as caught:
        await provider(vendor).generate(GenerationRequest(messages=[Message("user", "hi")]))
    assert (caught.value.kind, caught.value.retryable) == ("bad_response", True)


async def test_malformed_tool_arguments_are_a_bad_response(vendor):
    vendor.json(
        completion(
            {"tool_calls": [{"id": "c", "type": "function", "function": {"name": "search_documents", "arguments": "{oops"}}]},
            finish="tool_calls",
        )
    )
    with pytest.raises(ProviderError) as caught:
        await provider(vendor).generate(GenerationRequest(messages=[Message("user", "q")], tools=[SEARCH]))
    assert caught.value.kind == "bad_response"


async def test_a_stream_without_usage_is_a_bad_response(vendor):
    vendor.sse([(None, chunk({"content": "hi"})), (None, chunk({}, finish="stop")), (None, "[DONE]")])
    with pytest.raises(ProviderError) as caught:
        async for _ in provider(vendor).stream(GenerationRequest(messages=[Message("user", "q")])):
            pass
    assert caught.value.kind == "bad_response"


async def test_a_hung_vendor_times_out_at_the_request_deadline(vendor):
    vendor.stall()
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        await provider(vendor).generate(GenerationRequest(messages=[Message("user", "hi")], timeout_s=1.5))
    assert (caught.value.kind, caught.value.retryable) == ("timeout", True)
    assert time.monotonic() - started < HUNG_S / 4  # the stall was cut short
    assert len(vendor.requests) == 1  # it did reach the (hung) vendor
