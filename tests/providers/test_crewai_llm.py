"""The CrewAI adapter: a real one-agent crew on the local model, and the router's rules kept
(one retry layer, request context, provider attribution) when CrewAI drives the calls."""

from __future__ import annotations

import asyncio
import os

import pytest

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from crewai import Agent, Crew, Process, Task
from payloads import anthropic_error, anthropic_message, anthropic_usage

from services.providers.anthropic_provider import AnthropicProvider
from services.providers.crewai_llm import LLMCallFailed, RouterLLM
from services.providers.pricing import load_price_table
from services.providers.router import Router
from services.providers.settings import ProviderSettings
from services.runtime import request_context

KEY_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY")


@pytest.fixture
def offline(monkeypatch):
    for name in (*KEY_VARS, "DOCUTHINKER_PROVIDER_ORDER", "DOCUTHINKER_TASK_PROVIDERS"):
        monkeypatch.delenv(name, raising=False)


async def anthropic_router(vendor) -> Router:
    provider = AnthropicProvider(
        api_key="a", model="claude-sonnet-4-20250514", prices=load_price_table(), base_url=vendor.base_url
    )
    return Router({"anthropic": provider}, ProviderSettings(provider_order="anthropic"))


@pytest.mark.models  # the local LLM
def test_a_one_agent_crew_runs_on_the_local_model(offline):
    llm = RouterLLM(task="crew", router=Router.from_settings(ProviderSettings()), max_tokens=80, temperature=0.2)
    analyst = Agent(
        role="Document Analyst",
        goal="State the key point of a short document",
        backstory="You read documents carefully.",
        llm=llm,
        max_iter=2,
        max_retry_limit=0,
        allow_delegation=False,
        verbose=False,
    )
    task = Task(
        description=(
            "Document: 'Revenue grew 12% in 2024 thanks to the new billing system; support tickets fell by a "
            "third.' State its key point in one sentence."
        ),
        expected_output="One sentence.",
        agent=analyst,
    )
    output = Crew(agents=[analyst], tasks=[task], process=Process.sequential, verbose=False).kickoff()

    assert output.raw.strip()
    assert llm.results and {(r.provider, r.model) for r in llm.results} == {("local", "SmolLM2-135M-Instruct")}
    assert output.token_usage.prompt_tokens == sum(r.usage.prompt_tokens for r in llm.results)
    assert output.token_usage.completion_tokens == sum(r.usage.output_tokens for r in llm.results)


async def test_a_rate_limited_call_is_not_retried_by_crewai(vendor):
    router = await anthropic_router(vendor)
    vendor.json(anthropic_error("rate_limit_error", "Rate limit reached"), status=429, headers={"retry-after": "30"})
    llm = RouterLLM(task="crew", router=router)  # created on this loop: calls are submitted to it

    with pytest.raises(LLMCallFailed) as caught:
        await asyncio.to_thread(llm.call, "hello")

    assert caught.value.failure.reason == "PROVIDER_RATE_LIMITED"
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert len(vendor.requests) == 1  # CrewAI's own rate-limit retry found nothing to retry


async def test_calls_carry_the_request_context_and_the_answering_provider(vendor):
    router = await anthropic_router(vendor)
    records = []
    router.add_listener(records.append)
    vendor.json(anthropic_message([{"type": "text", "text": "Hi there."}], usage=anthropic_usage(12, 3)))
    llm = RouterLLM(task="crew", router=router)

    token = request_context.bind(request_context.RequestContext("req-7", "acme"))
    try:
        answer = await asyncio.to_thread(
            llm.call, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}]
        )
    finally:
        request_context.unbind(token)

    assert answer == "Hi there."
    assert records[0].tenant == "acme" and records[0].provider == "anthropic"
    assert llm.results[0].usage.input_tokens == 12
    sent = vendor.requests[0].body
    assert sent["system"][0]["text"] == "Be brief." and sent["messages"][0]["content"][0]["text"] == "hello"


async def test_calling_it_on_the_event_loop_thread_fails_fast(vendor):
    llm = RouterLLM(task="crew", router=await anthropic_router(vendor))
    with pytest.raises(RuntimeError, match="worker thread"):
        llm.call("hello")
    assert vendor.requests == []
