"""The real ``anthropic`` SDK against a local server speaking the Messages API wire format."""

from __future__ import annotations

import json
import time

import pytest
from payloads import ANTHROPIC_MODEL, HUNG_S
from payloads import anthropic_message as message
from payloads import anthropic_stream as stream_events

from services.providers.anthropic_provider import AnthropicProvider
from services.providers.base import (
    GenerationRequest,
    Message,
    ProviderError,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from services.providers.pricing import load_price_table

MODEL = ANTHROPIC_MODEL
SEARCH = ToolSpec(
    "search_documents",
    "Search the user's documents.",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


def provider(vendor, timeout_s: float = 10.0) -> AnthropicProvider:
    return AnthropicProvider(
        api_key="test-key", model=MODEL, prices=load_price_table(), base_url=vendor.base_url, timeout_s=timeout_s
    )


def cached_request() -> GenerationRequest:
    return GenerationRequest(
        system=[TextBlock("You answer from documents.", cacheable=True)],
        messages=[
            Message(
                "user",
                [TextBlock("<document_context>Revenue grew 12%.</document_context>", cacheable=True), TextBlock("Growth?")],
            )
        ],
        max_tokens=200,
        temperature=0.0,
    )


async def test_plain_text_maps_content_usage_cost_and_cache_blocks(vendor):
    usage = {"input_tokens": 120, "output_tokens": 30, "cache_creation_input_tokens": 50, "cache_read_input_tokens": 1000}
    vendor.json(message([{"type": "text", "text": "Revenue grew 12%."}], usage=usage))

    result = await provider(vendor).generate(cached_request())

    assert result.text == "Revenue grew 12%."
    assert (result.provider, result.model, result.stop_reason) == ("anthropic", MODEL, "end_turn")
    assert result.context_window == 200_000
    u = result.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (120, 30, 1000, 50)
    # sonnet-4: 3 / 15 / 0.3 / 3.75 $ per 1M tokens
    assert u.cost_usd == pytest.approx((120 * 3 + 30 * 15 + 1000 * 0.3 + 50 * 3.75) / 1e6)
    sent = vendor.requests[0]
    assert sent.path == "/v1/messages"
    assert "test-key" in (sent.headers.get("x-api-key") or sent.headers.get("authorization", ""))
    assert sent.body["system"] == [
        {"type": "text", "text": "You answer from documents.", "cache_control": {"type": "ephemeral"}}
    ]
    doc, question = sent.body["messages"][0]["content"]
    assert doc["cache_control"] == {"type": "ephemeral"} and "cache_control" not in question
    assert (sent.body["max_tokens"], sent.body["temperature"], sent.body["model"]) == (200, 0.0, MODEL)


async def test_temperature_is_left_out_for_models_that_reject_it(vendor):
    vendor.json(message([{"type": "text", "text": "ok"}]))
    await provider(vendor).generate(GenerationRequest(messages=[Message("user", "hi")], model="claude-opus-4-7"))
    assert vendor.requests[0].body["model"] == "claude-opus-4-7"
    assert "temperature" not in vendor.requests[0].body


async def test_no_more_than_four_cache_breakpoints(vendor):
    vendor.json(message([{"type": "text", "text": "ok"}]))
    blocks = [TextBlock(f"doc {i}", cacheable=True) for i in range(6)]
    await provider(vendor).generate(GenerationRequest(system="sys", messages=[Message("user", blocks)]))
    body = vendor.requests[0].body
    marked = [b for b in body["system"] + body["messages"][0]["content"] if "cache_control" in b]
    assert [b["text"] for b in marked] == ["doc 2", "doc 3", "doc 4", "doc 5"]


async def test_tool_use_round_trip(vendor):
    vendor.json(
        message(
            [
                {"type": "text", "text": "Let me search."},
                {"type": "tool_use", "id": "toolu_1", "name": "search_documents", "input": {"query": "revenue"}},
            ],
            stop_reason="tool_use",
        )
    )
    history = [
        Message("user", "What about revenue?"),
        Message("assistant", [ToolUseBlock("toolu_0", "search_documents", {"query": "rev"})]),
        Message("user", [ToolResultBlock("toolu_0", "nothing found", is_error=True)]),
    ]
    result = await provider(vendor).generate(GenerationRequest(messages=history, tools=[SEARCH]))

    assert result.stop_reason == "tool_use"
    assert result.text == "Let me search."
    assert result.tool_calls == [ToolUseBlock("toolu_1", "search_documents", {"query": "revenue"})]
    body = vendor.requests[0].body
    assert body["tools"] == [
        {"name": "search_documents", "description": "Search the user's documents.", "input_schema": dict(SEARCH.input_schema)}
    ]
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "toolu_0", "name": "search_documents", "input": {"query": "rev"}}
    ]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_0", "content": "nothing found", "is_error": True}
    ]


async def test_streamed_text_and_tool_call(vendor):
    start_usage = {"input_tokens": 80, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 400}
    vendor.sse(
        stream_events(
            [
                ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "Searching "}, {"type": "text_delta", "text": "now."}]),
                (
                    {"type": "tool_use", "id": "toolu_9", "name": "search_documents", "input": {}},
                    [
                        {"type": "input_json_delta", "partial_json": '{"query": "rev'},
                        {"type": "input_json_delta", "partial_json": 'enue"}'},
                    ],
                ),
            ],
            "tool_use",
            start_usage,
            output_tokens=42,
        )
    )
    events = [e async for e in provider(vendor).stream(GenerationRequest(messages=[Message("user", "q")], tools=[SEARCH]))]

    deltas = [e.text_delta for e in events if e.text_delta]
    tools = [e.tool_use for e in events if e.tool_use]
    final = events[-1].final
    assert deltas == ["Searching ", "now."]
    assert tools == [ToolUseBlock("toolu_9", "search_documents", {"query": "revenue"})]
    assert final is not None and final.text == "Searching now." and final.tool_calls == tools
    assert final.stop_reason == "tool_use"
    u = final.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (80, 42, 400, 0)
    assert u.cost_usd == pytest.approx((80 * 3 + 42 * 15 + 400 * 0.3) / 1e6)
    assert vendor.requests[0].body["stream"] is True


async def test_json_schema_uses_a_forced_tool(vendor):
    schema = {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}
    vendor.json(
        message([{"type": "tool_use", "id": "toolu_j", "name": "emit_json", "input": {"label": "positive"}}], "tool_use")
    )
    result = await provider(vendor).generate(GenerationRequest(messages=[Message("user", "sentiment?")], json_schema=schema))
    assert json.loads(result.text) == {"label": "positive"}
    assert result.tool_calls == [] and result.stop_reason == "end_turn"
    body = vendor.requests[0].body
    assert body["tool_choice"] == {"type": "tool", "name": "emit_json"}
    assert body["tools"][0]["input_schema"] == schema


@pytest.mark.parametrize(
    ("status", "body", "headers", "kind", "retryable", "retry_after"),
    [
        (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}, {"retry-after": "7"}, "rate_limited", True, 7.0),
        (500, {"type": "error", "error": {"type": "api_error", "message": "boom"}}, {}, "provider_down", True, None),
        (529, {"type": "error", "error": {"type": "overloaded_error", "message": "overloaded"}}, {}, "provider_down", True, None),
        (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}, {}, "context_overflow", False, None),
        (401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}, {}, "auth", False, None),
    ],
)
async def test_http_errors_are_classified(vendor, status, body, headers, kind, retryable, retry_after):
    vendor.json(body, status=status, headers=headers)
    with pytest.raises(ProviderError) as caught:
        await provider(vendor).generate(GenerationRequest(messages=[Message("user", "hi")]))
    error = caught.value
    assert (error.provider, error.kind, error.retryable, error.status_code) == ("anthropic", kind, retryable, status)
    assert error.retry_after_s == retry_after
    assert len(vendor.requests) == 1  # max_retries=0: the SDK never retried on its own


async def test_malformed_body_is_a_bad_response(vendor):
    vendor.raw('{"id": "msg_01", "content": [', status=200)
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


async def test_a_stream_that_stalls_mid_way_times_out(vendor):
    client = provider(vendor)
    vendor.json(message([{"type": "text", "text": "warm"}]))
    await client.generate(GenerationRequest(messages=[Message("user", "hi")]))  # pays the SDK's first-call setup
    usage = {"input_tokens": 5, "output_tokens": 1}
    events = stream_events([({"type": "text", "text": ""}, [{"type": "text_delta", "text": "a"}])], "end_turn", usage, 2)
    vendor.sse(events, hang_after=4)  # message start, block start, ping, the delta; then silence
    seen = []
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        async for event in client.stream(GenerationRequest(messages=[Message("user", "hi")], timeout_s=1.5)):
            seen.append(event)
    assert caught.value.kind == "timeout"
    assert [e.text_delta for e in seen] == ["a"]
    assert time.monotonic() - started < HUNG_S / 4
