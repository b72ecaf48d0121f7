"""Document versions through the real Envoy gateway: a named document uploaded twice is one document with two
versions; the same question is answered from version 1 and, differently, from version 2, each answer citing
its version; the versions list, an earlier version's bytes, the comparison (?from=1&to=2), a "what changed"
question citing both versions, and a delete that removes every version."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

TENANT = {"x-tenant-id": "versions-e2e"}
KEY = "policies/ferry-timetable.md"
V1 = """# Ferry timetable

## Weekdays

The morning ferry to Inchcolm leaves the harbour at 07:30 from pier four. Tickets cost 12 euros.

## Weekends

On Saturdays the first ferry leaves at 09:00. Bicycles travel free of charge.

## Safety

Life jackets are stored under every bench. The crew checks them before each crossing.
"""
V2 = V1.replace("leaves the harbour at 07:30 from pier four", "leaves the harbour at 08:30 from pier six") \
       .replace("Bicycles travel free of charge.", "Bicycles cost 3 euros.")
QUESTION = "When does the morning ferry to Inchcolm leave the harbour?"


@pytest.fixture(scope="module")
def client(mesh):
    with mesh.http(timeout=120) as http:
        yield http


def _ingest(client, text: str, name: str = "ferry-timetable.md") -> dict:
    reply = client.post("/v1/documents:ingest", params={"filename": name, "document_key": KEY}, content=text.encode(),
                        headers={**TENANT, "content-type": "text/markdown"})
    assert reply.status_code == 200, reply.text
    return reply.json()["result"]


def _ask(client, question: str, document_ids: list[str]) -> dict:
    reply = client.post("/v1/query", json={"question": question, "document_ids": document_ids}, headers=TENANT)
    assert reply.status_code == 200, reply.text
    return reply.json()["answer"]


@pytest.fixture(scope="module")
def document(client) -> dict:
    first = _ingest(client, V1)
    assert first["document"]["version"] == 1 and first["document"]["document_key"] == KEY
    before = _ask(client, QUESTION, [first["document"]["document_id"]])
    second = _ingest(client, V2, name="ferry-timetable-2026.md")
    assert second["document"]["document_id"] == first["document"]["document_id"]
    return {"id": first["document"]["document_id"], "first": first, "second": second, "before": before}


def test_a_new_version_re_embeds_only_what_changed(document):
    second = document["second"]
    assert second["document"]["version"] == 2 and not second["duplicate"]
    assert 0 < second["chunks_embedded"] < second["document"]["chunk_count"]
    assert second["chunks_reused"] == second["document"]["chunk_count"] - second["chunks_embedded"]


def test_the_same_question_is_answered_from_each_version_citing_it(client, document):
    before = document["before"]
    assert "07:30" in before["answer"] and "08:30" not in before["answer"], before["answer"]
    assert before["citations"] and {c["document_version"] for c in before["citations"]} == {1}
    now = _ask(client, QUESTION, [document["id"]])
    assert "08:30" in now["answer"] and "07:30" not in now["answer"], now["answer"]
    assert {c["document_version"] for c in now["citations"]} == {2}
    old = _ask(client, QUESTION, [f"{document['id']}@1"])  # an earlier version, named
    assert "07:30" in old["answer"] and {c["document_version"] for c in old["citations"]} == {1}
    assert all(c["document_id"] == document["id"] for c in old["citations"])
    # Search defaults to the live version; an explicit version filter is honoured.
    live = client.post("/v1/search", json={"query": "morning ferry Inchcolm", "top_k": 3}, headers=TENANT).json()
    assert {r["provenance"]["version"] for r in live["results"]} == {2}
    pinned = client.post("/v1/search", json={"query": "morning ferry Inchcolm", "top_k": 3,
                                             "document_ids": [f"{document['id']}@1"]}, headers=TENANT).json()
    assert {r["provenance"]["version"] for r in pinned["results"]} == {1} and "07:30" in pinned["results"][0]["text"]


def test_versions_content_and_comparison(client, document):
    listed = client.get(f"/v1/documents/{document['id']}/versions", headers=TENANT)
    assert listed.status_code == 200, listed.text
    versions = listed.json()["versions"]
    assert [(v["version"], v["state"]) for v in versions] == [(2, "VERSION_STATE_LIVE"), (1, "VERSION_STATE_SUPERSEDED")]
    assert versions[1]["filename"] == "ferry-timetable.md" and versions[0]["filename"] == "ferry-timetable-2026.md"
    old = client.get(f"/v1/documents/{document['id']}/versions/1:content", headers=TENANT)
    assert old.status_code == 200 and old.content == V1.encode()
    assert old.headers["content-security-policy"].startswith("sandbox")
    text = client.get(f"/v1/documents/{document['id']}/versions/1/text", headers=TENANT).json()
    assert "07:30" in "".join(s["text"] for s in text["sections"])
    compared = client.get(f"/v1/documents/{document['id']}:compare", params={"from": 1, "to": 2}, headers=TENANT)
    assert compared.status_code == 200, compared.text
    body = compared.json()
    assert (body["from"], body["to"], body["changed"], body["added"], body["removed"]) == (1, 2, 2, 0, 0)
    for change in body["changes"]:
        assert change["kind"] == "KIND_CHANGED"
        assert change["before"]["provenance"]["version"] == 1 and change["after"]["provenance"]["version"] == 2
        assert change["before"]["provenance"]["heading_path"]
    words = {(tuple(c["removed_words"]), tuple(c["added_words"])) for c in body["changes"]}
    assert (("07:30", "four."), ("08:30", "six.")) in words
    missing = client.get(f"/v1/documents/{document['id']}/versions/9:content", headers=TENANT)
    assert missing.status_code == 404 and missing.json()["details"][0]["reason"] == "VERSION_NOT_FOUND"
    other = client.get(f"/v1/documents/{document['id']}/versions", headers={"x-tenant-id": "versions-e2e-other"})
    assert other.status_code == 404


def test_what_changed_is_answered_from_the_comparison_citing_both_versions(client, document):
    for streamed in (False, True):
        question = "What changed between version 1 and version 2 of the ferry timetable?"
        if streamed:
            reply = client.post("/v1/query:stream", json={"question": question}, headers=TENANT)
            events = [__import__("json").loads(line[6:]) for line in reply.text.splitlines()
                      if line.startswith("data: ")]
            answer = events[-1]["done"]
        else:
            answer = _ask(client, question, [])
        assert "2 passage(s) changed" in answer["answer"], answer["answer"]
        assert "07:30" in answer["answer"] and "08:30" in answer["answer"]
        assert {c["document_version"] for c in answer["citations"]} == {1, 2}
        assert all(c["document_id"] == document["id"] for c in answer["citations"])


def test_deleting_the_document_deletes_every_version(client, document):
    assert client.delete(f"/v1/documents/{document['id']}", headers=TENANT).status_code == 200
    assert client.get(f"/v1/documents/{document['id']}/versions", headers=TENANT).status_code == 404
    search = client.post("/v1/search", json={"query": "morning ferry Inchcolm", "top_k": 3,
                                             "document_ids": [f"{document['id']}@1"]}, headers=TENANT)
    assert search.status_code == 404  # no such document, in any version
