"""The router over real SDK adapters talking to local vendor servers: failover, gate, listeners,
usage and cost totals, prompt-cache counters, deadlines, and the offline FAILED_PRECONDITION."""

from __future__ import annotations

import json
import time

import grpc
import pytest
from payloads import (
    HUNG_S,
    anthropic_error,
    anthropic_message,
    anthropic_stream,
    anthropic_usage,
    gemini_response,
    gemini_usage,
    openai_chunk,
    openai_completion,
    openai_usage,
)

from services.providers.anthropic_provider import AnthropicProvider
from services.providers.base import GenerationRequest, Message, TextBlock
from services.providers.call_stats import CallRecord
from services.providers.errors import NoProviderAvailable
from services.providers.gemini_provider import GeminiProvider
from services.providers.openai_provider import OpenAIProvider
from services.providers.pricing import load_price_table
from services.providers.router import Router
from services.providers.settings import ProviderSettings
from services.runtime import request_context
from services.runtime.errors import DeadlineExceeded, FailedPrecondition, ResourceExhausted, Unavailable

KEY_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY")
QUESTION = GenerationRequest(messages=[Message("user", "What changed?")], max_tokens=64)


@pytest.fixture
def no_keys(monkeypatch):
    for name in (*KEY_VARS, "DOCUTHINKER_PROVIDER_ORDER", "DOCUTHINKER_TASK_PROVIDERS", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def vendors(make_vendor, no_keys):
    """Anthropic, OpenAI and Gemini servers, and a router over the three (order a, o, g)."""
    a, o, g = await make_vendor(), await make_vendor(), await make_vendor()
    prices = load_price_table()
    providers = {
        "anthropic": AnthropicProvider(api_key="a", model="claude-sonnet-4-20250514", prices=prices, base_url=a.base_url),
        "openai": OpenAIProvider(api_key="o", model="gpt-4o-mini", prices=prices, base_url=o.base_url + "/v1"),
        "gemini": GeminiProvider(api_key="g", model="gemini-1.5-pro", prices=prices, base_url=g.base_url),
    }
    settings = ProviderSettings(provider_order="anthropic,openai,gemini")
    router = Router(providers, settings)
    records: list[CallRecord] = []
    router.add_listener(records.append)
    return a, o, g, router, records


async def test_a_retryable_failure_fails_over_to_the_next_provider(vendors):
    a, o, _g, router, records = vendors
    a.json(anthropic_error("api_error", "boom"), status=500)
    o.json(openai_completion({"content": "From OpenAI."}, tokens=openai_usage(100, 10)))

    result = await router.generate("summarize", QUESTION)

    assert (result.provider, result.text) == ("openai", "From OpenAI.")
    assert [(r.provider, r.ok, r.error.kind if r.error else None) for r in records] == [
        ("anthropic", False, "provider_down"),
        ("openai", True, None),
    ]
    assert records[1].tenant == "default" and records[1].task == "summarize" and records[1].latency_s > 0
    stats = router.stats()
    assert (stats["anthropic"].calls, stats["anthropic"].failures) == (1, 1)
    assert (stats["openai"].calls, stats["openai"].failures) == (1, 0)


async def test_a_non_retryable_failure_stops_there(vendors):
    a, o, _g, router, records = vendors
    a.json(anthropic_error("authentication_error", "invalid x-api-key"), status=401)
    with pytest.raises(FailedPrecondition) as caught:
        await router.generate("summarize", QUESTION)
    assert caught.value.reason == "PROVIDER_AUTH"
    assert o.requests == [] and len(records) == 1


async def test_when_every_provider_is_rate_limited_the_rpc_is_resource_exhausted(vendors):
    a, o, g, router, records = vendors
    a.json(anthropic_error("rate_limit_error", "slow down"), status=429, headers={"retry-after": "9"})
    o.json({"error": {"message": "Rate limit reached"}}, status=429, headers={"retry-after": "4"})
    g.json({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota"}}, status=429, headers={"retry-after": "2"})
    with pytest.raises(ResourceExhausted) as caught:
        await router.generate("summarize", QUESTION)
    error = caught.value
    assert error.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert error.metadata["providers"] == "anthropic,openai,gemini" and error.metadata["retry_after_s"] == "2"
    assert [e.retry_after_s for e in error.provider_errors] == [9.0, 4.0, 2.0]


async def test_usage_and_cost_add_up_over_calls_and_providers(vendors):
    a, o, g, router, records = vendors
    a.json(anthropic_message([{"type": "text", "text": "1"}], usage=anthropic_usage(1000, 200, cache_read=5000, cache_write=0)))
    a.json(anthropic_message([{"type": "text", "text": "2"}], usage=anthropic_usage(300, 50, cache_read=0, cache_write=4000)))
    a.json(anthropic_error("overloaded_error", "overloaded"), status=529)
    o.json(openai_completion({"content": "3"}, tokens=openai_usage(2000, 100, cached=1024)))
    for _ in range(3):
        await router.generate("summarize", QUESTION)

    stats = router.stats()
    sonnet = (1000 * 3 + 200 * 15 + 5000 * 0.3) / 1e6 + (300 * 3 + 50 * 15 + 4000 * 3.75) / 1e6
    mini = (2000 * 0.15 + 100 * 0.6) / 1e6
    au, ou = stats["anthropic"].usage, stats["openai"].usage
    assert (au.input_tokens, au.output_tokens, au.cache_read_tokens, au.cache_write_tokens) == (1300, 250, 5000, 4000)
    assert (ou.input_tokens, ou.output_tokens, ou.cache_read_tokens) == (976, 100, 1024)
    assert au.cost_usd == pytest.approx(sonnet) and ou.cost_usd == pytest.approx(mini)
    assert sum(r.usage.cost_usd for r in records) == pytest.approx(sonnet + mini)
    # Prompt cache: a call that read from the cache is a hit; a failed call is neither.
    assert (stats["anthropic"].cache_hits, stats["anthropic"].cache_misses) == (1, 1)
    assert (stats["openai"].cache_hits, stats["openai"].cache_misses) == (1, 0)


async def test_the_gate_skips_providers_whose_circuit_is_open(vendors):
    a, o, _g, router, _records = vendors
    router.set_gate(lambda provider: provider != "anthropic")
    o.json(openai_completion({"content": "ok"}))
    result = await router.generate("summarize", QUESTION)
    assert result.provider == "openai" and a.requests == []

    router.set_gate(lambda provider: False)
    with pytest.raises(Unavailable) as caught:
        await router.generate("summarize", QUESTION)
    assert caught.value.reason == "PROVIDERS_CIRCUIT_OPEN"


async def test_an_async_listener_is_awaited_and_a_broken_one_is_ignored(vendors):
    a, _o, _g, router, records = vendors
    seen: list[str] = []

    async def recorder(record: CallRecord) -> None:
        seen.append(record.provider)

    def broken(record: CallRecord) -> None:
        raise RuntimeError("listener bug")

    router.add_listener(broken)
    router.add_listener(recorder)
    a.json(anthropic_message([{"type": "text", "text": "fine"}]))
    assert (await router.generate("chat", QUESTION)).text == "fine"
    assert seen == ["anthropic"] and len(records) == 1


async def test_invalid_json_output_fails_over_and_is_still_paid_for(vendors):
    a, o, _g, router, records = vendors
    schema = {"type": "object", "properties": {"label": {"enum": ["positive", "negative"]}}, "required": ["label"]}
    a.json(
        anthropic_message(
            [{"type": "tool_use", "id": "t", "name": "emit_json", "input": {"label": "meh"}}],
            "tool_use",
            usage=anthropic_usage(40, 8),
        )
    )
    o.json(openai_completion({"content": '{"label": "positive"}'}, tokens=openai_usage(50, 6)))
    request = GenerationRequest(messages=[Message("user", "sentiment?")], json_schema=schema)
    result = await router.generate("sentiment", request)
    assert result.provider == "openai" and json.loads(result.text) == {"label": "positive"}
    assert records[0].error is not None and records[0].error.kind == "bad_response"
    assert records[0].usage.input_tokens == 40 and records[0].usage.cost_usd > 0


async def test_a_stream_fails_over_before_its_first_event(vendors):
    a, o, _g, router, records = vendors
    a.json(anthropic_error("api_error", "boom"), status=503)
    o.sse(
        [
            (None, openai_chunk({"role": "assistant", "content": ""})),
            (None, openai_chunk({"content": "Hello "})),
            (None, openai_chunk({"content": "world"})),
            (None, openai_chunk({}, finish="stop")),
            (None, openai_chunk(None, tokens=openai_usage(30, 2))),
            (None, "[DONE]"),
        ]
    )
    events = [e async for e in router.stream("chat", QUESTION)]
    assert "".join(e.text_delta for e in events) == "Hello world"
    final = events[-1].final
    assert final is not None and final.provider == "openai" and final.usage.output_tokens == 2
    assert [(r.provider, r.ok) for r in records] == [("anthropic", False), ("openai", True)]


async def test_a_stream_that_fails_after_output_does_not_fail_over(vendors):
    a, o, _g, router, records = vendors
    a.json(anthropic_message([{"type": "text", "text": "warm"}]))
    await router.generate("chat", QUESTION)  # pays the SDK's first-call setup
    usage = anthropic_usage(5, 1)
    block = ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "partial"}])
    a.sse(anthropic_stream([block], "end_turn", usage, 3), hang_after=4)  # hangs after the delta
    seen = []
    with pytest.raises(DeadlineExceeded):
        async for event in router.stream("chat", GenerationRequest(messages=[Message("user", "q")], timeout_s=1.5)):
            seen.append(event.text_delta)
    assert seen == ["partial"] and o.requests == []
    assert records[-1].error is not None and records[-1].error.kind == "timeout"


async def test_the_rpc_deadline_bounds_all_attempts_together(vendors):
    a, o, g, router, _records = vendors
    a.json(anthropic_message([{"type": "text", "text": "warm"}]))
    await router.generate("chat", QUESTION)
    a.stall()
    token = request_context.bind(request_context.RequestContext("req-1", "acme", deadline=time.monotonic() + 1.2))
    started = time.monotonic()
    try:
        with pytest.raises(DeadlineExceeded):
            await router.generate("chat", QUESTION)
    finally:
        request_context.unbind(token)
    assert time.monotonic() - started < HUNG_S / 4
    assert o.requests == [] and g.requests == []  # no time was left for them


async def test_a_hung_provider_gets_one_attempt_timeout_then_the_next_answers(vendors):
    a, o, _g, _router, _records = vendors
    router = Router({n: _router.provider(n) for n in ("anthropic", "openai")},
                    ProviderSettings(provider_order="anthropic,openai", provider_timeout_s=1.5))
    records: list[CallRecord] = []
    router.add_listener(records.append)
    o.json(openai_completion({"content": "warm"}))
    await router.provider("openai").generate(QUESTION)  # pays the SDK's first-call setup
    a.stall()
    o.json(openai_completion({"content": "Still here."}))
    started = time.monotonic()
    result = await router.generate("chat", QUESTION)  # no request or RPC deadline at all
    assert (result.provider, result.text) == ("openai", "Still here.")
    assert 1.4 < time.monotonic() - started < HUNG_S / 4
    assert [(r.provider, r.error.kind if r.error else None) for r in records] == [("anthropic", "timeout"), ("openai", None)]


async def test_gemini_serves_when_it_is_the_only_one_left(vendors):
    a, o, g, router, records = vendors
    a.json(anthropic_error("api_error", "down"), status=500)
    o.json({"error": {"message": "down"}}, status=502)
    g.json(gemini_response([{"text": "Gemini here."}], tokens=gemini_usage(10, 3)))
    request = GenerationRequest(system=[TextBlock("sys", cacheable=True)], messages=QUESTION.messages)
    result = await router.generate("summarize", request)
    assert (result.provider, result.text) == ("gemini", "Gemini here.")
    assert [r.provider for r in records] == ["anthropic", "openai", "gemini"]


# -- choice and configuration (no network) ----------------------------------------------------


def test_offline_only_free_form_tasks_are_served_by_the_local_model(no_keys):
    router = Router.from_settings(ProviderSettings())
    assert router.providers_for("rewrite") == ["local"] and router.can_serve("crew")
    assert not router.can_serve("translate") and router.providers_for("summarize") == []


async def test_translation_offline_is_a_failed_precondition_naming_the_env_vars(no_keys):
    router = Router.from_settings(ProviderSettings())
    with pytest.raises(NoProviderAvailable) as caught:
        await router.generate("translate", QUESTION)
    error = caught.value
    assert isinstance(error, FailedPrecondition) and error.code == grpc.StatusCode.FAILED_PRECONDITION
    for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        assert variable in str(error)
    assert "local model only serves" in str(error)
    with pytest.raises(NoProviderAvailable):
        async for _ in router.stream("translate", QUESTION):
            pass


def test_keys_and_task_overrides_choose_the_order(no_keys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("GEMINI_API_KEY", "g-x")
    monkeypatch.setenv("DOCUTHINKER_TASK_PROVIDERS", "translate=gemini,openai;rewrite=local")
    router = Router.from_settings(ProviderSettings())
    assert router.providers_for("translate") == ["gemini", "openai"]
    assert router.providers_for("rewrite") == ["local"]
    assert router.providers_for("summarize") == ["openai", "gemini"]
    assert router.providers_for("chat") == ["openai", "gemini", "local"]


def test_an_openai_compatible_server_needs_no_key(no_keys, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    router = Router.from_settings(ProviderSettings())
    assert router.providers_for("translate") == ["openai"]
    assert router.provider("openai").max_tokens_field == "max_tokens"


def test_a_task_override_without_any_configured_provider_says_which_setting(no_keys, monkeypatch):
    monkeypatch.setenv("DOCUTHINKER_TASK_PROVIDERS", "summarize=local")
    router = Router.from_settings(ProviderSettings())
    error = router._no_provider("summarize")
    assert "DOCUTHINKER_TASK_PROVIDERS" in str(error)


def test_bad_provider_names_are_rejected(no_keys, monkeypatch):
    monkeypatch.setenv("DOCUTHINKER_TASK_PROVIDERS", "translate=deepl")
    with pytest.raises(ValueError, match="unknown provider"):
        ProviderSettings().order_for("translate")
