"""The OpenAI adapter against a REAL OpenAI-compatible server: llama.cpp's own HTTP server
(xllamacpp serves /v1/chat/completions) with the local SmolLM2 weights."""

from __future__ import annotations

import json
import secrets

import jsonschema
import pytest

from services.providers.base import GenerationRequest, Message, ProviderError
from services.providers.local_model import gguf_path
from services.providers.openai_provider import OpenAIProvider
from services.providers.pricing import load_price_table

# Kept for the life of the process: see local_model on destroying an xllamacpp server early.
_SERVERS: list[object] = []


@pytest.fixture(scope="module")
def llamacpp():
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(gguf_path())
    params.n_ctx = 2048
    params.n_parallel = 1
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.verbosity = -1
    params.ui = False
    key = secrets.token_urlsafe(16)
    params.api_keys = [key]
    server = xllamacpp.Server(params)
    _SERVERS.append(server)
    return f"{server.listening_address}/v1", key


def provider(llamacpp, key: str | None = None) -> OpenAIProvider:
    base_url, real_key = llamacpp
    return OpenAIProvider(api_key=key or real_key, model="smollm2", prices=load_price_table(), base_url=base_url)


async def test_plain_completion(llamacpp):
    result = await provider(llamacpp).generate(GenerationRequest(messages=[Message("user", "Say hello.")], max_tokens=12))
    assert result.text and result.provider == "openai" and "SmolLM2" in result.model
    assert result.usage.prompt_tokens > 0 and 0 < result.usage.output_tokens <= 12
    assert result.usage.cost_usd == 0.0  # a SmolLM2 model is priced as local


async def test_streamed_completion_with_usage_chunk(llamacpp):
    request = GenerationRequest(messages=[Message("user", "Say hello again.")], max_tokens=12)
    events = [e async for e in provider(llamacpp).stream(request)]
    final = events[-1].final
    assert final is not None and "".join(e.text_delta for e in events) == final.text
    assert 0 < final.usage.output_tokens <= 12 and final.stop_reason in ("end_turn", "max_tokens")
    if final.stop_reason == "max_tokens":
        assert final.usage.output_tokens == 12


async def test_response_format_json_schema_is_honoured(llamacpp):
    schema = {"type": "object", "properties": {"tone": {"enum": ["formal", "casual"]}}, "required": ["tone"]}
    request = GenerationRequest(messages=[Message("user", "Tone of 'hey guys'?")], json_schema=schema, max_tokens=30)
    result = await provider(llamacpp).generate(request)
    jsonschema.validate(json.loads(result.text), schema)


async def test_a_wrong_key_is_an_auth_error(llamacpp):
    with pytest.raises(ProviderError) as caught:
        await provider(llamacpp, key="wrong").generate(GenerationRequest(messages=[Message("user", "hi")], max_tokens=4))
    assert (caught.value.kind, caught.value.retryable, caught.value.status_code) == ("auth", False, 401)
