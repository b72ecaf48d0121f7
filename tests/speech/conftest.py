"""Fixtures of the speech tests: recordings spoken by espeak-ng, transcribers on the packaged models."""

from __future__ import annotations

import pytest

from services.speech import SpeechSettings, WhisperTranscriber

from .media_fixtures import espeak_available, recording

SENTENCES = [
    "Welcome to the harbor safety briefing.",
    "The emergency meeting point is next to the blue crane by the river.",
    "Visitors must wear a yellow helmet at all times.",
]


@pytest.fixture(scope="session")
def briefing():
    """(int16 samples, rate, per-sentence (start s, end s)) of the three sentences spoken."""
    if not espeak_available():
        pytest.fail("espeak-ng is missing: tools/system_packages.sh installs it (apt-get install espeak-ng)")
    return recording(SENTENCES)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    transcriber = WhisperTranscriber(SpeechSettings(model="tiny.en", cpu_threads=2,
                                                    cache_dir=str(tmp_path_factory.mktemp("speech-cache"))))
    yield transcriber
    transcriber.close()


@pytest.fixture(scope="session")
def base(tmp_path_factory):
    transcriber = WhisperTranscriber(SpeechSettings(model="base", cpu_threads=2,
                                                    cache_dir=str(tmp_path_factory.mktemp("speech-cache"))))
    yield transcriber
    transcriber.close()
