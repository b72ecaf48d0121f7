"""Transcription of real speech (espeak-ng) in every container, with VAD, language and timing."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from services.runtime.errors import InvalidArgument
from services.speech import Lane, decode

from .conftest import SENTENCES
from .media_fixtures import CONTAINERS, contains_words, encode, silence


@pytest.mark.parametrize("suffix", sorted(CONTAINERS))
def test_tiny_en_hears_every_sentence_in_every_container(briefing, tiny, suffix) -> None:
    samples, rate, _ = briefing
    transcript = tiny.transcribe(decode(encode(samples, rate, suffix), 60))
    for sentence in SENTENCES:
        assert contains_words(transcript.text, sentence, tolerance=2), (suffix, sentence, transcript.text)
    assert transcript.language == "en" and transcript.model == "tiny.en"


@pytest.mark.parametrize("suffix", ["wav", "webm"])
def test_base_detects_english_and_times_each_sentence(briefing, base, suffix) -> None:
    samples, rate, spoken_at = briefing
    transcript = base.transcribe(decode(encode(samples, rate, suffix), 60))
    assert transcript.language == "en" and transcript.language_probability > 0.5
    assert transcript.model == "base" and transcript.duration == pytest.approx(len(samples) / rate, abs=0.1)
    assert transcript.speech_seconds < transcript.duration  # the detector dropped the silences
    assert len(transcript.segments) == len(SENTENCES), transcript.segments
    for segment, sentence, (start, end) in zip(transcript.segments, SENTENCES, spoken_at):
        assert contains_words(segment.text, sentence, tolerance=1), (segment.text, sentence)
        assert abs(segment.start - start) < 0.6 and abs(segment.end - end) < 0.6, (segment, start, end)


def test_progress_runs_from_zero_to_the_whole_recording_on_the_document_lane(briefing, tiny) -> None:
    samples, rate, _ = briefing
    calls: list[tuple[float, float, str, str]] = []
    audio = decode(encode(samples, rate, "flac"), 60)
    tiny.transcribe(audio, lambda done, total, lang: calls.append(
        (done, total, lang, threading.current_thread().name)))
    assert calls[0][:3] == (0.0, audio.seconds, "") and calls[-1][:3] == (audio.seconds, audio.seconds, "en")
    assert [c[0] for c in calls] == sorted(c[0] for c in calls)
    assert all(name.startswith("speech-doc") for *_, name in calls)


def test_questions_run_on_their_own_worker(briefing, tiny) -> None:
    samples, rate, _ = briefing
    names: list[str] = []
    tiny.transcribe(decode(encode(samples, rate, "wav"), 60),
                    lambda *_: names.append(threading.current_thread().name), lane=Lane.QUESTION)
    assert names and all(name.startswith("speech-ask") for name in names)


@pytest.mark.parametrize("kind", ["silence", "hiss"])
def test_a_recording_without_speech_is_refused(tiny, kind) -> None:
    quiet = silence(6.0)
    if kind == "hiss":
        quiet = (np.random.default_rng(7).normal(0, 60, len(quiet))).astype(np.int16)
    with pytest.raises(InvalidArgument) as refused:
        tiny.transcribe(decode(encode(quiet, 22050, "mp3"), 60))
    assert refused.value.reason == "NO_SPEECH"
