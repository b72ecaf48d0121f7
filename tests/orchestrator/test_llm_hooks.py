"""The provider router with the orchestrator's circuit breakers (gate) and cost recorder (listener)."""

from __future__ import annotations

import pytest

from services.orchestrator.circuit_breaker import CircuitBreakers, CircuitState
from services.orchestrator.costs import CostTracker, intent_scope
from services.orchestrator.llm import LanguageModels, track_attempts
from services.providers.base import GenerationRequest, Message
from services.providers.pricing import load_price_table
from services.providers.router import Router
from services.providers.settings import ProviderSettings
from services.runtime.errors import DomainError

from .fakes import ScriptedProvider

REQUEST = GenerationRequest(messages=[Message("user", "hi")])


@pytest.fixture
def setup(db, clock):
    openai = ScriptedProvider("openai", "gpt-4o-mini")
    local = ScriptedProvider("local", "smollm2")
    router = Router({"openai": openai, "local": local}, ProviderSettings(provider_order="openai,local"))
    breakers = CircuitBreakers(db, threshold=3, cooldown_s=30, clock=clock)
    costs = CostTracker(db, load_price_table(), clock=clock)
    llm = LanguageModels(router, breakers, costs)
    llm.install()
    return llm, openai, local, breakers, costs


async def test_failure_trips_the_breaker_fails_over_and_a_probe_closes_it(setup, clock):
    llm, openai, local, breakers, _ = setup
    openai.default = openai.fail()
    for _ in range(3):
        with track_attempts() as attempts:
            result = await llm.generate("chat", REQUEST)
        assert result.provider == "local"
        assert attempts.providers == ["openai", "local"]
    assert breakers.get("provider:openai").state is CircuitState.OPEN
    assert len(openai.requests) == 3
    # open: openai is not even tried
    with track_attempts() as attempts:
        await llm.generate("chat", REQUEST)
    assert attempts.providers == ["local"] and len(openai.requests) == 3
    # after the cooldown one probe goes to openai; it succeeds and closes the circuit
    clock.advance(30)
    openai.default = "back"
    result = await llm.generate("chat", REQUEST)
    assert result.provider == "openai" and result.text == "back"
    assert breakers.get("provider:openai").state is CircuitState.CLOSED


async def test_non_retryable_errors_do_not_trip(setup):
    llm, openai, _, breakers, _ = setup
    openai.default = openai.fail("invalid_request", retryable=False)
    for _ in range(5):
        with pytest.raises(DomainError):
            await llm.generate("chat", REQUEST)
    assert breakers.get("provider:openai").state is CircuitState.CLOSED


async def test_costs_are_recorded_per_provider_and_intent(setup):
    llm, openai, local, _, costs = setup
    openai.default = "paid"
    with intent_scope("chat.document"):
        await llm.generate("chat", REQUEST)
    report = costs.report("today")
    # gpt-4o-mini: 100 input tokens at $0.15/M + 20 output at $0.6/M
    assert report.by_provider["openai"].cost == pytest.approx((100 * 0.15 + 20 * 0.6) / 1e6)
    assert report.by_intent["chat.document"].requests == 1


async def test_pinned_provider_is_guarded_and_costed(setup):
    llm, openai, local, breakers, costs = setup
    local.default = "local answer"
    result = await llm.generate("chat", REQUEST, provider="local")
    assert result.provider == "local" and openai.requests == []
    with pytest.raises(DomainError) as refused:
        await llm.generate("chat", REQUEST, provider="gemini")
    assert refused.value.reason == "PROVIDER_NOT_CONFIGURED"
    assert costs.report("today").by_provider["local"].requests == 1


def test_likely_provider_respects_open_circuits(setup):
    llm, _, _, breakers, _ = setup
    assert llm.likely_provider("chat").name == "openai"
    assert llm.remote_can_serve("chat") and llm.can_serve("agent_tool_choice")
    for _ in range(3):
        breakers.record_failure("provider:openai")
    assert llm.likely_provider("chat").name == "local"
    assert breakers.get("provider:openai").state is CircuitState.OPEN  # looking took no probe
