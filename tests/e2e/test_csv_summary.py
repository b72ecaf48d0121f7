"""CSV text (no sentence punctuation) is summarised through REST: the NLP summary and the analysis pipeline."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

HEADER = "region,product,units,revenue,manager"


def csv_text(rows: int = 90) -> str:
    regions, products = ("north", "south", "east", "west"), ("solar panel", "inverter", "battery pack")
    lines = [HEADER] + [
        f"{regions[i % 4]},{products[i % 3]},{(i * 37) % 900 + 1},{(i * 7919) % 90000 + 1000},"
        f"{'Ada Lovelace' if i % 2 else 'Alan Turing'}"
        for i in range(rows)
    ]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def client(mesh):
    with mesh.http(timeout=300, headers={"x-tenant-id": "csv-summary"}) as http:
        yield http


def test_nlp_summary_of_csv_text_quotes_whole_rows(client):
    text = csv_text()
    reply = client.post("/v1/nlp/summary", json={"text": text})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    rows = set(text.splitlines())
    assert 1 <= len(body["sentences"]) <= 5
    for sentence in body["sentences"]:
        assert text[sentence["start"] : sentence["end"]] == sentence["text"] and sentence["text"] in rows


def test_analyze_of_csv_text_has_an_overview(client):
    text = csv_text()
    # The quick analysis: the crew's local model (about half a minute here) has its own tests in test_crew_analysis.
    reply = client.post("/v1/analyze", json={"text": text, "skip_crew": True})
    assert reply.status_code == 200, reply.text[:500]
    body = reply.json()
    assert "rag" in body["steps_run"] and "crew" not in body["steps_run"] and body["overview"].strip()
    assert all(token in text for token in body["overview"].split()), body["overview"]


def test_summary_of_an_uploaded_csv_document(client):
    text = csv_text(120)
    ingest = client.post("/v1/documents:ingest", params={"filename": "sales.csv"}, content=text.encode(),
                         headers={"Content-Type": "text/csv"})
    assert ingest.status_code == 200, ingest.text
    document_id = ingest.json()["result"]["document"]["document_id"]
    reply = client.post("/v1/nlp/summary", json={"document_id": document_id})
    assert reply.status_code == 200, reply.text
    sentences = reply.json()["sentences"]
    assert 1 <= len(sentences) <= 5 and all(s["text"].strip() for s in sentences)
