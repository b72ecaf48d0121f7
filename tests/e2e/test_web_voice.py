"""The Ask page by voice, in a real browser against the real mesh.

A recording of known sentences (espeak-ng, re-encoded to OGG/Opus by PyAV) is uploaded; Chromium's
fake microphone then "speaks" a WAV of a question (espeak-ng again): the Ask page records it with
MediaRecorder, sends it to /v1/query:spoken, and shows the transcript as the question and the cited
answer. The recording's citation opens the document view with an <audio> player of the original bytes
set to the cited start time, and the cited transcript span highlighted. The time from pressing stop to
the answer on screen is written to results.json (a figure, not an assertion).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time

import pytest

from tests.e2e.browser import ARTIFACTS_ENV, launch
from tests.speech.conftest import SENTENCES
from tests.speech.media_fixtures import contains_words, encode, espeak_available, recording

pytestmark = pytest.mark.e2e

TENANT = "web-voice-e2e"
FILENAME = "harbor-briefing.ogg"
QUESTION = "Where is the emergency meeting point?"


def sse_events(body: str) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in body.splitlines() if line.startswith("data: ")]


def test_ask_by_voice_and_play_the_cited_span(mesh, tmp_path_factory):
    from playwright.sync_api import expect, sync_playwright

    if not espeak_available():
        pytest.fail("espeak-ng is missing: tools/system_packages.sh installs it (apt-get install espeak-ng)")
    expect.set_options(timeout=60_000)
    out = tmp_path_factory.mktemp("web-voice")
    samples, rate, _ = recording(SENTENCES)
    with mesh.http(headers={"x-tenant-id": TENANT}, timeout=300) as api:
        reply = api.post("/v1/documents", params={"filename": FILENAME}, content=encode(samples, rate, "ogg"),
                         headers={"content-type": "audio/ogg"})
        assert reply.status_code == 200, reply.text
        document = sse_events(reply.text)[-1]["done"]["document"]
        assert document["status"] == "DOCUMENT_STATUS_READY", document
        document_id = document["document_id"]
        sections = api.get(f"/v1/documents/{document_id}/text").json()["sections"]
    # The fake microphone plays this WAV once (%noloop), from when the page opens the microphone.
    question, question_rate, _ = recording([QUESTION], lead_s=0.3, tail_s=0.5)
    wav = out / "question.wav"
    wav.write_bytes(encode(question, question_rate, "wav"))
    spoken_s = len(question) / question_rate

    errors: list[str] = []
    figures: dict = {}
    with sync_playwright() as p:
        browser = launch(p, ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                             f"--use-file-for-fake-audio-capture={wav}%noloop",
                             "--autoplay-policy=no-user-gesture-required"])
        context = browser.new_context(viewport={"width": 1280, "height": 900},
                                      extra_http_headers={"authorization": f"Bearer {mesh.mint(TENANT)}"})
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
        provoked: list[str] = []  # the one refusal this test provokes (a silent recording) is no defect
        page.on("response", lambda r: r.status >= 400
                and (provoked.append(r.url) if r.status == 400 and "query:spoken" in r.url and expect_refusal
                     else errors.append(f"HTTP {r.status} {r.request.method} {r.url}")))
        expect_refusal = False
        page.set_default_timeout(60_000)

        # -- Ask by voice, over the selected document (as a typed question would be)
        page.goto(f"{mesh.base_url}/#/ask")
        page.check("#scope-some")
        page.locator(f'.picker input[value="{document_id}"]').check()
        mic = page.locator('[data-testid="mic"]')
        mic.press("Enter")  # keyboard: the button is focusable and Enter starts recording
        expect(mic).to_have_attribute("aria-pressed", "true")
        expect(mic).to_have_text(re.compile("Stop recording"))
        expect(page.locator('[data-testid="mic-status"]')).to_contain_text("Recording")
        time.sleep(spoken_s + 1.0)
        mic.press("Enter")  # stop: the recording is sent
        expect(mic).to_have_attribute("aria-pressed", "false")
        turn = page.locator("article.turn").first
        expect(turn).to_have_attribute("data-spoken", "true")
        expect(turn).to_have_attribute("data-state", "done", timeout=180_000)
        transcript = turn.locator('[data-testid="transcript"]').inner_text()
        assert contains_words(transcript, QUESTION, tolerance=1), transcript
        answer = turn.locator('[data-testid="answer"]').inner_text()
        assert "blue crane" in answer.lower(), answer
        figures["spoken_question_ms"] = float(turn.get_attribute("data-latency-ms"))
        citation = turn.locator("a.cite-link[data-start-seconds]").first
        expect(citation).to_contain_text(FILENAME)
        cited = {k: citation.get_attribute(f"data-{k}")
                 for k in ("document-id", "char-start", "char-end", "start-seconds", "end-seconds")}
        assert cited["document-id"] == document_id
        start_s, end_s = float(cited["start-seconds"]), float(cited["end-seconds"])
        assert end_s > start_s
        page.screenshot(path=out / "ask-voice.png", full_page=True)

        # -- the citation opens the recording at the cited time, the transcript span highlighted
        citation.click()
        player = page.locator('audio[data-testid="player"]')
        expect(player).to_have_attribute("data-seeked-to", re.compile(r"^\d"))
        assert abs(float(player.get_attribute("data-seeked-to")) - start_s) <= 0.5
        now = player.evaluate("a => a.currentTime")
        assert start_s - 0.5 <= now <= end_s + 0.5, (now, start_s, end_s)
        mark = page.locator('[data-testid="cited-span"]')
        expect(mark).to_be_visible()
        start, end = int(cited["char-start"]), int(cited["char-end"])
        section = next(s for s in sections if len(s["text"]) >= end and s["text"][start:end] == mark.text_content())
        assert mark.text_content() == section["text"][start:end]
        assert "blue crane" in mark.text_content().lower()
        play_from = page.locator('[data-testid="play-from"]')
        expect(play_from).to_have_text(f"▶ Play from {int(start_s) // 60}:{int(start_s) % 60:02d}")
        player.evaluate("a => { a.pause(); a.currentTime = 0; }")
        play_from.click()  # replays the span from its start
        page.wait_for_function("a => Math.abs(a.currentTime - Number(a.dataset.seekedTo)) < 1.5",
                               arg=player.element_handle())
        player.evaluate("a => a.pause()")
        page.screenshot(path=out / "document-audio.png", full_page=True)

        # -- failures said in words: the microphone refused, and a recording with no speech in it
        page.goto(f"{mesh.base_url}/#/ask")
        page.evaluate("""() => { navigator.mediaDevices.getUserMedia =
            () => Promise.reject(new DOMException("Permission denied", "NotAllowedError")); }""")
        mic.click()
        expect(page.locator('[data-testid="mic-status"]')).to_contain_text("Microphone permission was refused")
        expect(mic).to_have_attribute("aria-pressed", "false")
        page.evaluate("""() => { navigator.mediaDevices.getUserMedia = async () => {
            const audio = new AudioContext();  // a silent track: the recording holds no speech
            const source = audio.createConstantSource();
            source.offset.value = 0;
            const sink = audio.createMediaStreamDestination();
            source.connect(sink);
            source.start();
            return sink.stream; }; }""")
        expect_refusal = True
        mic.click()
        expect(mic).to_have_attribute("aria-pressed", "true")
        time.sleep(2.0)
        mic.click()
        failed = page.locator("article.turn").first
        expect(failed).to_have_attribute("data-state", "failed", timeout=120_000)
        expect(failed.get_by_role("alert")).to_contain_text("No speech was heard")
        expect(failed.get_by_role("alert")).to_contain_text("NO_SPEECH")
        assert len(provoked) == 1, provoked
        browser.close()
    assert not errors, errors

    results = {**figures, "question": QUESTION, "transcript": transcript, "audio_seconds": round(spoken_s, 2),
               "note": "time in the browser from pressing stop to the cited answer on screen: the WebM/Opus upload, "
                       "transcription (whisper base) and the answer; shared 2-core machine, models warm or not"}
    (out / "results.json").write_text(json.dumps(results, indent=2))
    target = os.environ.get(ARTIFACTS_ENV)
    if target:
        for png in out.glob("*.png"):
            shutil.copy(png, target)
    print(f"web voice: screenshots and results in {out}; spoken question answered "
          f"{figures['spoken_question_ms']:.0f} ms after stop ({spoken_s:.1f} s of speech)")
