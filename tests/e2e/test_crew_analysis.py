"""The crew and the full analysis through the real Envoy gateway, offline (no API keys): every
agent runs on the local SmolLM2 model, translation reports FAILED_PRECONDITION.

Three crew runs in all (the local model is slow on a loaded machine): one CrewAnalyze, one
AnalyzeDocument, one StreamAnalyzeDocument.

What a 135M model writes is not the contract: each agent's answer is either grounded (cited or
restated passages, returned as exact spans of the uploaded text, quoted under "Sources") or
marked UNSUPPORTED with nothing cited. Those are checked, never the model's wording.
"""

from __future__ import annotations

import json
import re
import time

import pytest

pytestmark = pytest.mark.e2e

TENANT = {"x-tenant-id": "crew-e2e"}
KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY")
LOCAL = {"provider": "local", "model": "SmolLM2-135M-Instruct"}
ROLES = ["Document Analyst", "Cross-Referencer", "Insights Curator"]

REPORT = """Harbour Wind Operations Review 2024

The Lyon warehouse stores spare turbine blades for the northern wind farms. It was opened in 1998 by Claire Dubois.

Inspections found corrosion on 14 turbine blades in 2024, up from 6 in 2023.
The maintenance budget rose by 12 percent to 4.2 million euros.

A drone inspection programme starts in March 2025 and should cut inspection time by half.

The main risk is the shortage of certified technicians: three of the nine technicians retire in 2025.
"""
TERMS = ("turbine", "blade", "corrosion", "technician", "drone", "inspection", "warehouse", "lyon", "maintenance",
         "budget", "2024", "2025")


def sse_events(body: str) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in body.splitlines() if line.startswith("data: ")]


def grounded(text: str) -> bool:
    lowered = text.lower()
    return any(term in lowered for term in TERMS)


GROUNDED = ("CREW_GROUNDING_CITED", "CREW_GROUNDING_RESTATED", "CREW_GROUNDING_NO_ANSWER")
UNSUPPORTED_NOTE = "Sources: none of the passages supports this answer."
NO_ANSWER_NOTE = "The model gave no usable answer; these are the passages it was given."


def assert_grounded_or_marked(client, task: dict, document_id: str | None = None) -> None:
    """The crew's contract for one agent: a grounding verdict, and citations that are exact spans of the
    uploaded text and are quoted in the output; or UNSUPPORTED, said in the output, with nothing cited."""
    verdict, citations, output = task["grounding"], task.get("citations", []), task["output"]
    assert verdict in (*GROUNDED, "CREW_GROUNDING_UNSUPPORTED"), task
    if verdict == "CREW_GROUNDING_UNSUPPORTED":
        assert not citations and output.endswith(UNSUPPORTED_NOTE), task
        return
    assert citations and UNSUPPORTED_NOTE not in output, task
    assert output.startswith(NO_ANSWER_NOTE) == (verdict == "CREW_GROUNDING_NO_ANSWER"), task
    for citation in citations:
        assert document_id is None or citation["document_id"] == document_id
        page = page_texts(client, citation["document_id"])[citation.get("page", 0)]
        assert page[citation.get("char_start", 0):citation["char_end"]] == citation["excerpt"], citation
        assert grounded(citation["excerpt"])  # a span of this report, not of another tenant's document
        # Cited by its number, or quoted under Sources as the agent saw it (flattened, maybe clipped).
        quoted = flat(citation["excerpt"])[:60] in flat(output)
        assert quoted or f"[{citation['marker']}]" in output, (citation, output)


_pages: dict[str, dict[int, str]] = {}


def page_texts(client, document_id: str) -> dict[int, str]:
    if document_id not in _pages:
        text = client.get(f"/v1/documents/{document_id}/text", headers=TENANT)
        assert text.status_code == 200, text.text
        _pages[document_id] = {s.get("page", 0): s["text"] for s in text.json()["sections"]}
    return _pages[document_id]


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def client(mesh):
    present = [k for k in KEY_VARIABLES if mesh.env.get(k)]
    assert not present, f"these tests check the offline platform: unset {present}"
    with mesh.http(timeout=300) as http:
        yield http


@pytest.fixture(scope="module")
def crew_reply(client) -> tuple[dict, float]:
    started = time.monotonic()
    reply = client.post("/v1/crew/analyze", json={"text": REPORT, "question": "What are the main risks?"},
                        headers=TENANT)
    assert reply.status_code == 200, reply.text
    return reply.json(), time.monotonic() - started


@pytest.fixture(scope="module")
def analysis_reply(client, crew_reply) -> tuple[dict, float]:
    started = time.monotonic()
    reply = client.post("/v1/analyze", json={"text": REPORT, "translate_lang": "fr"}, headers=TENANT)
    assert reply.status_code == 200, reply.text
    return reply.json(), time.monotonic() - started


def test_crew_runs_three_local_agents_each_grounded_in_the_uploaded_text_or_marked(client, crew_reply):
    body, seconds = crew_reply
    print(f"\ncrew run (CrewAnalyze through Envoy, offline): {seconds:.1f} s")
    tasks = body["tasks"]
    assert [t["role"] for t in tasks] == ROLES
    assert [t["agent"] for t in tasks] == ["document_analyst", "cross_referencer", "insights_curator"]
    assert all(t["engine"] == LOCAL for t in tasks)
    assert [t["tools_used"] for t in tasks] == [["document_topics", "document_search"], ["document_search"],
                                                ["document_topics", "document_search"]]
    for task in tasks:
        assert_grounded_or_marked(client, task)
    assert len({c["document_id"] for t in tasks for c in t.get("citations", [])}) <= 1  # the uploaded text
    print("verdicts: " + ", ".join(t["grounding"].removeprefix("CREW_GROUNDING_") for t in tasks))
    assert body["final_output"] == tasks[-1]["output"]
    usage = body["usage"]
    assert int(usage["input_tokens"]) + int(usage.get("cache_read_tokens", 0)) > 0 and int(usage["output_tokens"]) > 0


def test_analysis_returns_a_grounded_brief_with_citations_into_the_document(client, analysis_reply):
    body, seconds = analysis_reply
    print(f"\nanalysis run (AnalyzeDocument through Envoy, offline): {seconds:.1f} s")
    assert "crew_error" not in body, body["crew_error"]  # the crew ran (a failure would be kept in-band)
    assert body["steps_run"] == ["ingest", "rag", "sentiment", "translate", "crew", "finalize"]
    document_id = body["document_id"]
    text = client.get(f"/v1/documents/{document_id}/text", headers=TENANT).json()
    pages = {s["page"]: s["text"] for s in text["sections"]}
    document = flat(" ".join(pages.values()))

    overview = flat(body["overview"])
    assert overview and all(flat(s) in document for s in re.split(r"(?<=\.)\s+", overview) if s)
    assert body["topics"] and any(grounded(t) for t in body["topics"])
    # The default (broad) question is answered with the cited summary, not an abstention.
    assert re.search(r"\[1\]", body["qa_answer"]) and body["citations"]
    for citation in body["citations"]:
        assert citation["document_id"] == document_id
        assert pages[citation["page"]][citation["char_start"]:citation["char_end"]] == citation["excerpt"]
    # Quotes: the cited sentences, then passages (a long one is cut, marked " ...").
    quotes = [flat(q).removesuffix(" ...") for q in body["supporting_context"]]
    assert quotes and all(q in document for q in quotes)
    assert body["sentiment"]["label"] in ("positive", "neutral", "negative")
    crew = body["crew_analysis"]["tasks"]
    assert [t["role"] for t in crew] == ROLES and all(t["engine"] == LOCAL for t in crew)
    for task in crew:
        assert_grounded_or_marked(client, task, document_id)


def test_translation_offline_is_a_clear_failed_precondition_and_the_rest_is_kept(analysis_reply):
    body, _ = analysis_reply
    error = body["translation_error"]
    assert error["code"] == 9
    assert "OPENAI_API_KEY" in error["message"] and "ANTHROPIC_API_KEY" in error["message"]
    assert not body.get("translation") and body["overview"] and body["crew_analysis"]["tasks"]


def test_the_same_text_is_one_document(client, crew_reply, analysis_reply):
    listed = client.get("/v1/documents", headers=TENANT).json()
    assert [d["document_id"] for d in listed["documents"]] == [analysis_reply[0]["document_id"]]


def test_the_stream_emits_each_node_then_done(client, analysis_reply):
    # The quick analysis (no crew: the two tests above run it, and the stream of its node is a unit test's).
    document_id = analysis_reply[0]["document_id"]
    request = {"document_id": document_id, "question": "How many turbine blades had corrosion in 2024?",
               "sync_graph": True, "skip_crew": True}
    reply = client.post("/v1/analyze:stream", json=request, headers=TENANT)
    assert reply.status_code == 200, reply.text
    events = sse_events(reply.text)
    nodes = [e["node"] for e in events[:-1]]
    assert [n["node"] for n in nodes] == ["ingest", "rag", "sentiment", "graph_sync", "finalize"]
    assert all(n["summary"] for n in nodes)
    done = events[-1]["done"]
    assert done["steps_run"] == [n["node"] for n in nodes] and done["document_id"] == document_id
    assert "14" in done["qa_answer"] and done["citations"][0]["document_id"] == document_id
    assert "translation_error" not in done and "crew_analysis" not in done and "crew_error" not in done


def test_bad_requests_fail_with_their_status(client):
    neither = client.post("/v1/analyze", json={"question": "anything"}, headers=TENANT)
    assert neither.status_code == 400 and neither.json()["code"] == 3
    missing = client.post("/v1/crew/analyze", json={"document_id": "no-such-document"}, headers=TENANT)
    assert missing.status_code == 404
