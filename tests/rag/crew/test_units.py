"""Small pieces of the crew: output tidying, settings, each agent's provider order."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from services.providers.router import Router
from services.providers.settings import ProviderSettings
from services.rag.crew import CrewSettings
from services.rag.crew.engines import agent_order, agent_router
from services.rag.crew.evidence import Snippet, clip
from services.rag.crew.grounding import NO_ANSWER, UNSUPPORTED, Verdict, ground
from services.rag.crew.tidy import tidy

from .fakes import FakeProvider


def test_tidy_collapses_the_small_models_loops_and_drops_a_cut_off_fragment():
    raw = ("Final Answer: - Corrosion rose to 14 blades [2].\n- Corrosion rose to 14 blades [2].\n\n\n"
           "- Costs rose 12.5%. Costs rose 12.5%. Staff retire in 2025 [3].\n- The drone prog")
    expected = "- Corrosion rose to 14 blades [2].\n\n- Costs rose 12.5%. Staff retire in 2025 [3]."
    assert tidy(raw, truncated=True) == expected
    assert tidy("- A list item without a stop\n- Another", truncated=False) == "- A list item without a stop\n- Another"
    assert tidy("Only a fragment without end", truncated=True) == "Only a fragment without end"


def test_tidy_drops_the_prompt_the_model_echoes():
    raw = "\"Current Task: Question: What are the risks?\nPassages from the document:\n[3] Staff retire in 2025."
    assert tidy(raw) == "[3] Staff retire in 2025."


PASSAGES = [Snippet("r.txt", 1, text, "d", f"c{i}") for i, text in enumerate((
    "The Lyon warehouse stores spare turbine blades.",
    "Inspections found corrosion on 14 turbine blades in 2024.",
))]


def test_sources_quote_what_an_answer_cites_or_restates_and_the_verdict_says_which():
    marker = ground("[2]", PASSAGES)
    assert (marker.text, marker.verdict, marker.cited) == (f"[2]\n\nSources:\n[2] {PASSAGES[1].snippet}",
                                                           Verdict.CITED, (2,))
    restated_text = "- Corrosion was found on 14 turbine blades during inspections."
    restated = ground(restated_text, PASSAGES)
    assert (restated.text, restated.verdict, restated.cited) == (
        f"{restated_text}\n\nSources:\n[2] {PASSAGES[1].snippet}", Verdict.RESTATED, (2,))
    quoted = f"[1] {PASSAGES[0].snippet}"
    assert ground(quoted, PASSAGES).text == quoted  # already quoted verbatim: nothing to add
    empty = ground("", PASSAGES)
    assert empty.text.startswith(f"{NO_ANSWER}\n\nSources:\n[1] ") and empty.verdict is Verdict.NO_ANSWER
    assert empty.cited == (1, 2)


def test_an_answer_resting_on_no_passage_is_marked_unsupported_with_nothing_cited():
    for text in ("Bananas are yellow [7].", "The moon is made of cheese."):
        unsupported = ground(text, PASSAGES)
        assert (unsupported.text, unsupported.verdict, unsupported.cited) == (
            f"{text}\n\n{UNSUPPORTED}", Verdict.UNSUPPORTED, ())
    assert ground("Anything at all.", []).verdict is Verdict.UNSUPPORTED  # no passages: nothing to rest on


def test_clip_cuts_at_a_word_boundary():
    assert clip("alpha beta   gamma", 100) == "alpha beta gamma"
    assert clip("alpha beta gamma delta", 14) == "alpha beta ..."


def test_settings_default_to_the_seed_line_up_and_reject_unknown_providers(monkeypatch):
    for name in ("ANALYST", "CROSS_REFERENCER", "CURATOR"):
        monkeypatch.delenv(f"DOCUTHINKER_CREW_{name}_PROVIDER", raising=False)
    settings = CrewSettings()
    assert [settings.preferred(k) for k in ("analyst", "cross_referencer", "curator")] == \
        ["openai", "gemini", "anthropic"]
    monkeypatch.setenv("DOCUTHINKER_CREW_CURATOR_PROVIDER", "Local")
    assert CrewSettings().curator_provider == "local"
    with pytest.raises(ValidationError):
        CrewSettings(analyst_provider="mistral")


def test_an_agents_order_puts_its_configured_preference_first():
    settings = ProviderSettings(provider_order="anthropic,openai,gemini,local", task_providers="")
    shared = Router({n: FakeProvider(n) for n in ("openai", "gemini", "local")}, settings)
    assert agent_order(shared, "gemini") == ["gemini", "openai", "local"]
    assert agent_order(shared, "anthropic") == ["openai", "gemini", "local"]  # no key: skipped
    routed = agent_router(shared, settings, "gemini")
    assert routed.providers_for("crew") == ["gemini", "openai", "local"]
    assert routed.provider("gemini") is shared.provider("gemini")  # one client per process


def test_with_no_provider_for_the_crew_the_shared_router_explains_itself():
    settings = ProviderSettings(provider_order="openai", task_providers="")
    shared = Router({"local": FakeProvider("local")}, settings)
    assert agent_router(shared, settings, "openai") is shared
