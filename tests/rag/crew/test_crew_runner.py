"""The crew runner with the real CrewAI and router, providers faked at the router's boundary.

What is checked: each agent's prompt carries its own evidence (gathered with its tools), the
provider preference and failover per agent, the attribution of each task to the provider and
model that produced it, usage adding up, tools bound only for models that can drive them (and
then really called), the local model's loops tidied, and failures surfacing as domain errors.
"""

from __future__ import annotations

import json

import pytest

from docuthinker.rag.v1 import rag_service_pb2 as rag_pb
from services.providers.base import ProviderError
from services.providers.router import Router
from services.providers.settings import ProviderSettings
from services.rag.analysis.messages import crew_pb
from services.rag.crew import CrewRunner, CrewSettings
from services.rag.crew.grounding import NO_ANSWER, UNSUPPORTED, Verdict
from services.rag.documents import DocumentRecord, DocumentStatus
from services.runtime.errors import DomainError
from tests.support import records

from .fakes import PASSAGES, FakeProvider, FakeSearch, FakeTopics, prompt_text

DOC = "doc-1"


def record(document_id: str = DOC) -> DocumentRecord:
    return records.document(document_id=document_id, filename="report.txt", content_sha256="sha", size_bytes=100,
                            status=DocumentStatus.READY, chunk_count=len(PASSAGES))


async def document_text(tenant: str, document_id: str, limit: int) -> str:
    return "\n\n".join(PASSAGES)[:limit]


def runner(providers: dict[str, FakeProvider], order: str, search: FakeSearch | None = None,
           topics: FakeTopics | None = None, **crew) -> CrewRunner:
    settings = ProviderSettings(provider_order=order, task_providers="")
    router = Router(providers, settings)
    return CrewRunner(search or FakeSearch(), topics or FakeTopics(), document_text, CrewSettings(**crew),
                      router=lambda: router, providers=lambda: settings)


def role_of(request) -> str:
    text = prompt_text(request)
    return next(r for r in ("Document Analyst", "Cross-Referencer", "Insights Curator") if f"You are {r}" in text)


async def test_offline_crew_runs_every_agent_on_the_local_model_with_evidence_in_each_prompt():
    looping = "- Corrosion was found on 14 blades [2].\n- Corrosion was found on 14 blades [2].\n- Corrosion"
    local = FakeProvider("local", reply=lambda request: looping, model="SmolLM2-135M-Instruct",
                         stop_reason="max_tokens")
    search, topics = FakeSearch(), FakeTopics()

    result = await runner({"local": local}, "anthropic,openai,gemini,local", search, topics).analyze(
        "acme", record(), "What are the risks?")

    assert [t.role for t in result.tasks] == ["Document Analyst", "Cross-Referencer", "Insights Curator"]
    assert [t.agent for t in result.tasks] == ["document_analyst", "cross_referencer", "insights_curator"]
    assert {(t.provider, t.model) for t in result.tasks} == {("local", "SmolLM2-135M-Instruct")}
    assert [t.tools_used for t in result.tasks] == [("document_topics", "document_search"), ("document_search",),
                                                    ("document_topics", "document_search")]
    # Offline the model cannot drive CrewAI's tool protocol: no tools in its prompt, evidence inlined instead.
    assert len(local.requests) == 3
    for request in local.requests:
        text = prompt_text(request)
        assert "Action Input" not in text and "[1] (p.1) The Lyon warehouse stores spare turbine blades" in text
        assert "Question: What are the risks?" in text
    assert "Main topics of the document: turbine blades, corrosion, technicians" in prompt_text(local.requests[0])
    # The loop is collapsed, the fragment the token cap cut off dropped, the cited passage quoted.
    assert result.tasks[0].output == f"- Corrosion was found on 14 blades [2].\n\nSources:\n[2] {PASSAGES[1]}"
    # The verdict and the cited span: passage [2] is the second hit, its chunk's exact span of the page.
    assert {t.grounding for t in result.tasks} == {Verdict.CITED}
    (citation,) = result.tasks[0].citations
    assert (citation.marker, citation.chunk.chunk_id, citation.excerpt) == (2, f"{DOC}-c1", PASSAGES[1])
    assert (citation.char_start, citation.char_end) == (0, len(PASSAGES[1]))
    task_pb = crew_pb(result).tasks[0]
    assert task_pb.grounding == rag_pb.CREW_GROUNDING_CITED
    assert [(c.marker, c.document_id, c.excerpt) for c in task_pb.citations] == [(2, DOC, PASSAGES[1])]
    assert result.final_output == result.tasks[-1].output
    assert result.usage.input_tokens == 30 and result.usage.output_tokens == 15
    assert result.usage.cost_usd == pytest.approx(0.003)
    assert all(q[0] == "acme" and q[2] == (DOC,) for q in search.queries)
    assert len(topics.texts) == 1  # one NLP call per crew run


async def test_an_answer_that_rests_on_no_passage_is_marked_and_cites_nothing():
    replies = iter(["- Bananas are yellow and monkeys like them.", "", "- Corrosion was found on 14 blades."])
    local = FakeProvider("local", reply=lambda request: next(replies))

    result = await runner({"local": local}, "local").analyze("acme", record(), "What are the risks?")

    unsupported, empty, restated = result.tasks
    assert (unsupported.grounding, unsupported.citations) == (Verdict.UNSUPPORTED, ())
    assert unsupported.output.endswith(UNSUPPORTED)
    assert empty.grounding is Verdict.NO_ANSWER and empty.output.startswith(NO_ANSWER)
    assert [c.excerpt for c in empty.citations] == list(PASSAGES[:3])  # the passages it was given, shown instead
    assert restated.grounding is Verdict.RESTATED and [c.marker for c in restated.citations] == [2]
    assert [t.grounding for t in crew_pb(result).tasks] == [
        rag_pb.CREW_GROUNDING_UNSUPPORTED, rag_pb.CREW_GROUNDING_NO_ANSWER, rag_pb.CREW_GROUNDING_RESTATED]


async def test_each_agent_prefers_its_provider_and_falls_back_along_the_router_order():
    def answer(name: str):
        return lambda request: f"Thought: done\nFinal Answer: - {name} says the blades corrode [2]."

    openai = FakeProvider("openai", reply=answer("openai"))
    gemini = FakeProvider("gemini", reply=answer("gemini"))
    local = FakeProvider("local")

    # No anthropic key: the curator's preference is skipped and the router's order decides (openai first).
    result = await runner({"openai": openai, "gemini": gemini, "local": local}, "anthropic,openai,gemini,local") \
        .analyze("acme", record(), "What happens to the blades?")

    assert [t.provider for t in result.tasks] == ["openai", "gemini", "openai"]
    assert [t.model for t in result.tasks] == ["openai-fake", "gemini-fake", "openai-fake"]
    assert result.tasks[1].output == ("- gemini says the blades corrode [2].\n\nSources:\n"
                                      f"[2] {PASSAGES[1]}")  # the cited passage, as the agent saw it
    assert local.requests == []
    assert {role_of(r) for r in openai.requests} == {"Document Analyst", "Insights Curator"}


async def test_a_capable_model_gets_the_tools_and_its_search_runs_on_the_document():
    analyst_calls = []

    def analyst(request):
        if role_of(request) != "Document Analyst":
            return "Thought: ok\nFinal Answer: - Reviewed [1]."
        analyst_calls.append(prompt_text(request))
        if len(analyst_calls) == 1:
            return ("Thought: I need the drone details.\nAction: document_search\n"
                    'Action Input: {"query": "drone programme"}')
        return "Thought: I now know the final answer\nFinal Answer: - Drones halve inspection time from March 2025 [4]."

    openai = FakeProvider("openai", reply=analyst)
    search = FakeSearch()
    result = await runner({"openai": openai, "local": FakeProvider("local")}, "openai,local", search) \
        .analyze("acme", record(), "What changes in 2025?")

    assert ("acme", "drone programme", (DOC,)) in search.queries
    # The second call sees the tool's JSON answer ([{source, page, snippet}]) as its observation.
    assert len(analyst_calls) == 2 and json.dumps(PASSAGES[3])[1:-1] in analyst_calls[1]
    assert '"source": "report.txt", "page": 1' in analyst_calls[1]
    assert result.tasks[0].output.startswith("- Drones halve inspection time from March 2025 [4].\n\nSources:\n[4] ")
    assert "document_search" in prompt_text(openai.requests[0])  # the tool is described to the model
    assert result.usage.output_tokens == 5 * len(openai.requests)


async def test_a_failing_preferred_provider_fails_over_and_the_task_names_who_answered():
    down = ProviderError("openai", "overloaded", retryable=True, kind="provider_down", status_code=503)
    openai = FakeProvider("openai", fail=down)
    local = FakeProvider("local", reply=lambda request: "- The warehouse is in Lyon [1].")

    result = await runner({"openai": openai, "local": local}, "openai,local").analyze("acme", record(), "")

    assert result.tasks[0].provider == "local" and len(openai.requests) == 3
    assert "Question: What are the key points of this document?" in prompt_text(local.requests[0])


async def test_a_non_retryable_failure_surfaces_as_the_routers_domain_error():
    denied = ProviderError("openai", "bad key", retryable=False, kind="auth", status_code=401)
    with pytest.raises(DomainError) as caught:
        await runner({"openai": FakeProvider("openai", fail=denied)}, "openai").analyze("acme", record(), "Risks?")
    assert caught.value.reason == "PROVIDER_AUTH"
