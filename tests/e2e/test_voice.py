"""Voice through the real mesh and Envoy: recordings (made here by espeak-ng, re-encoded by PyAV)
uploaded like any document, answered with time-coded citations, spoken questions over REST and
through the orchestrator's chat.voice intent, and each kind of bad media's HTTP status."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from tests.speech.conftest import SENTENCES
from tests.speech.media_fixtures import CONTAINERS, contains_words, encode, espeak_available, recording, silence

pytestmark = pytest.mark.e2e

TENANT = {"x-tenant-id": "voice-e2e"}
FORMATS = {"x-tenant-id": "voice-e2e-formats"}
BAD = {"x-tenant-id": "voice-e2e-bad"}
CONTENT_TYPES = {"wav": "audio/wav", "mp3": "audio/mpeg", "ogg": "audio/ogg", "flac": "audio/flac",
                 "m4a": "audio/mp4", "webm": "audio/webm", "mp4": "video/mp4",
                 "mov": "video/quicktime"}
QUESTION = "Where is the emergency meeting point?"


def sse_events(body: str) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in body.splitlines() if line.startswith("data: ")]


def error_reason(reply: httpx.Response) -> str:
    for detail in reply.json().get("details", []):
        if detail.get("@type", "").endswith("google.rpc.ErrorInfo"):
            return detail["reason"]
    return ""


def upload(client, name: str, data: bytes, headers=TENANT) -> httpx.Response:
    suffix = name.rsplit(".", 1)[-1]
    return client.post("/v1/documents", params={"filename": name}, content=data,
                       headers={**headers, "content-type": CONTENT_TYPES.get(suffix, "application/octet-stream")})


@pytest.fixture(scope="module")
def client(mesh):
    with mesh.http(timeout=300) as http:
        yield http


@pytest.fixture(scope="module")
def briefing():
    if not espeak_available():
        pytest.fail("espeak-ng is missing: tools/system_packages.sh installs it (apt-get install espeak-ng)")
    return recording(SENTENCES)


@pytest.fixture(scope="module")
def briefing_doc(client, briefing) -> dict:
    samples, rate, _ = briefing
    reply = upload(client, "harbor-briefing.mp3", encode(samples, rate, "mp3"))
    assert reply.status_code == 200, reply.text
    events = sse_events(reply.text)
    progress = [e["progress"] for e in events[:-1]]
    assert progress[0]["stage"] == "INGEST_STAGE_RECEIVED"
    heard = [p for p in progress if p["stage"] == "INGEST_STAGE_TRANSCRIBED"]
    assert heard, progress
    assert int(heard[0].get("done", 0)) == 0 and heard[-1]["done"] == heard[-1]["total"] == "14", heard
    assert "language: en" in heard[-1]["message"]
    assert progress[-1]["stage"] in ("INGEST_STAGE_INDEXED", "INGEST_STAGE_GRAPH_SYNCED")
    document = events[-1]["done"]["document"]
    assert document["status"] == "DOCUMENT_STATUS_READY" and document["file_type"] == "audio"
    assert document["content_type"] == "audio/mpeg"
    return document


def test_the_transcript_is_the_document_text(client, briefing_doc) -> None:
    reply = client.get(f"/v1/documents/{briefing_doc['document_id']}/text", headers=TENANT)
    assert reply.status_code == 200, reply.text
    text = " ".join(s["text"] for s in reply.json()["sections"])
    for sentence in SENTENCES:
        assert contains_words(text, sentence, tolerance=1), (sentence, text)


def test_a_question_about_the_recording_cites_when_it_was_said(client, briefing, briefing_doc) -> None:
    _, _, spoken_at = briefing
    reply = client.post("/v1/query", json={"question": QUESTION, "document_ids": [briefing_doc["document_id"]]},
                        headers=TENANT)
    assert reply.status_code == 200, reply.text
    answer = reply.json()["answer"]
    assert "blue crane" in answer["answer"].lower(), answer
    citation = answer["citations"][0]
    assert "crane" in citation["excerpt"].lower()
    start, end = spoken_at[1]  # the second sentence holds the answer
    assert citation["start_seconds"] <= start + 0.6 and citation["end_seconds"] >= end - 0.6, (citation, start, end)
    assert citation["start_seconds"] > spoken_at[0][1] - 0.6 and citation["end_seconds"] < spoken_at[2][0] + 0.6
    chunk = answer["retrieved_chunks"][0]["provenance"]
    assert chunk["start_seconds"] <= citation["start_seconds"] and chunk["end_seconds"] >= citation["end_seconds"]


def test_a_spoken_question_is_transcribed_and_answered(client, briefing, briefing_doc) -> None:
    _, _, spoken_at = briefing
    samples, rate, _ = recording([QUESTION], lead_s=0.3, tail_s=0.3)
    reply = client.post("/v1/query:spoken", params={"document_ids": briefing_doc["document_id"]},
                        content=encode(samples, rate, "webm"), headers={**TENANT, "content-type": "audio/webm"})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert contains_words(body["transcript"], QUESTION, tolerance=1), body["transcript"]
    assert body["language"] == "en" and body["speech_model"] == "whisper-base" and body["audio_seconds"] > 1
    answer = body["answer"]
    assert answer["question"] == body["transcript"] and "blue crane" in answer["answer"].lower(), answer
    citation = answer["citations"][0]
    assert citation["document_id"] == briefing_doc["document_id"]
    assert citation["start_seconds"] <= spoken_at[1][0] + 0.6 and citation["end_seconds"] >= spoken_at[1][1] - 0.6


def test_chat_voice_through_the_orchestrator(client, briefing_doc) -> None:
    samples, rate, _ = recording([QUESTION], lead_s=0.3, tail_s=0.3)
    audio = base64.b64encode(encode(samples, rate, "ogg")).decode()
    reply = client.post("/v1/supervisor/process", json={"route": "/process-audio", "audio": audio,
                                                        "document_ids": [briefing_doc["document_id"]]},
                        headers=TENANT)
    assert reply.status_code == 200, reply.text
    events = reply.json() if reply.text.lstrip().startswith("[") else sse_events(reply.text)
    assert events[0]["classification"]["intent"] == "chat.voice"
    [answer] = [e["subtask"] for e in events if "subtask" in e]
    assert answer["operation"] == "rag.spoken_query" and answer["state"] == "TASK_STATE_SUCCEEDED", answer
    assert contains_words(answer["data"]["transcript"], QUESTION, tolerance=1)
    assert "blue crane" in answer["data"]["answer"].lower()
    assert answer["data"]["citations"][0]["end_seconds"] > 0


@pytest.mark.parametrize("suffix", sorted(CONTAINERS))
def test_every_container_uploads_and_is_transcribed(client, briefing, suffix) -> None:
    samples, rate, _ = briefing
    reply = upload(client, f"briefing.{suffix}", encode(samples, rate, suffix), headers=FORMATS)
    assert reply.status_code == 200, reply.text
    document = sse_events(reply.text)[-1]["done"]["document"]
    assert document["status"] == "DOCUMENT_STATUS_READY", document
    text = client.get(f"/v1/documents/{document['document_id']}/text", headers=FORMATS).json()
    transcript = " ".join(s["text"] for s in text["sections"])
    for sentence in SENTENCES:
        assert contains_words(transcript, sentence, tolerance=1), (suffix, sentence, transcript)


def _long_flac(briefing) -> bytes:
    """A real FLAC whose header claims five hours (over the default four-hour limit)."""
    samples, rate, _ = briefing
    data = bytearray(encode(samples, rate, "flac"))
    packed = int.from_bytes(data[18:26], "big")
    data[18:26] = ((packed & ~((1 << 36) - 1)) | (5 * 3600 * rate)).to_bytes(8, "big")
    return bytes(data)


@pytest.mark.parametrize("case,status,reason", [
    ("corrupt.mp3", 400, "CORRUPT_FILE"),
    ("silent.ogg", 400, "NO_SPEECH"),
    ("empty.wav", 400, "EMPTY_DOCUMENT"),
    ("long.flac", 400, "MEDIA_TOO_LONG"),
    ("movie.avi", 400, "UNSUPPORTED_FILE_TYPE"),
])
def test_bad_media_gets_a_clear_error_and_nothing_is_stored(client, briefing, case, status, reason) -> None:
    data = {
        "corrupt.mp3": lambda: b"ID3\x04" + bytes(range(256)) * 64,
        "silent.ogg": lambda: encode(silence(4.0), 22050, "ogg"),
        "empty.wav": lambda: b"",
        "long.flac": lambda: _long_flac(briefing),
        "movie.avi": lambda: b"RIFF....AVI LIST",
    }[case]()
    reply = upload(client, case, data, headers=BAD)
    assert reply.status_code == status, reply.text
    assert error_reason(reply) == reason, reply.text
    listed = client.get("/v1/documents", headers=BAD).json()
    assert listed.get("documents", []) == []


def test_spoken_questions_have_limits_too(client) -> None:
    too_long = encode(silence(61.0, 8000), 8000, "wav")
    reply = client.post("/v1/query:spoken", content=too_long, headers={**TENANT, "content-type": "audio/wav"})
    assert reply.status_code == 400 and error_reason(reply) == "MEDIA_TOO_LONG", reply.text
    reply = client.post("/v1/query:spoken", content=b"", headers={**TENANT, "content-type": "audio/wav"})
    assert reply.status_code == 400 and error_reason(reply) == "EMPTY_MEDIA", reply.text
    reply = client.post("/v1/query:spoken", content=encode(silence(3.0), 22050, "mp3"),
                        headers={**TENANT, "content-type": "audio/mpeg"})
    assert reply.status_code == 400 and error_reason(reply) == "NO_SPEECH", reply.text


async def test_the_mcp_voice_question_tool(mesh, briefing_doc, tmp_path) -> None:
    import os
    import sys

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from services.launcher.mesh import ROOT

    samples, rate, _ = recording([QUESTION], lead_s=0.3, tail_s=0.3)
    question = tmp_path / "question.m4a"
    question.write_bytes(encode(samples, rate, "m4a"))
    env = {k: v for k, v in mesh.env.items() if k.startswith(("DOCUTHINKER_", "HF_", "TRANSFORMERS_"))}
    env["DOCUTHINKER_MCP_TENANT"] = TENANT["x-tenant-id"]
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    params = StdioServerParameters(command=sys.executable, args=["-m", "services.orchestrator.mcp.server"],
                                   env=env, cwd=str(ROOT))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        reply = await session.call_tool("voice_question", {"audioPath": str(question),
                                                           "documentIds": [briefing_doc["document_id"]]})
        assert not reply.isError, reply.content
        data = reply.structuredContent or json.loads(reply.content[0].text)
        assert contains_words(data["transcript"], QUESTION, tolerance=1) and "blue crane" in data["answer"].lower()
        refused = await session.call_tool("voice_question", {})
        assert refused.isError and "exactly one of audioPath" in refused.content[0].text
