"""Recordings through the real ingestion pipeline (real stores, real transcription with tiny.en, a
fake embedder): transcription progress, time-coded chunks, and bad media leaving nothing stored."""

from __future__ import annotations

import asyncio
import hashlib
import pathlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from services.rag.documents import DocumentStatus, IngestOutcome, IngestProgress, IngestStage
from services.rag.ingest.parsers import AudioReader
from services.rag.ingest.timecodes import time_range
from services.rag.runtime import RagRuntime
from services.rag.settings import RagSettings
from services.runtime.errors import DomainError
from services.speech import SpeechSettings, WhisperTranscriber
from services.storage.settings import StorageSettings
from tests.speech.conftest import SENTENCES
from tests.speech.media_fixtures import contains_words, encode, espeak_available, recording, silence

from .fakes import HashEmbedder
from .probes import collect

EMBEDDED = StorageSettings(store_backend="embedded")

pytestmark = pytest.mark.models  # Whisper

MAX_UPLOAD = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def briefing():
    if not espeak_available():
        pytest.fail("espeak-ng is missing: tools/system_packages.sh installs it (apt-get install espeak-ng)")
    return recording(SENTENCES)


@pytest.fixture(scope="module")
def transcriber():
    speech = WhisperTranscriber(SpeechSettings(model="tiny.en", cpu_threads=2))
    yield speech
    speech.close()


@pytest.fixture
def runtime(tmp_path: pathlib.Path, transcriber):
    reader = AudioReader(transcriber, max_seconds=30, max_bytes=2 * 1024 * 1024)
    opened = RagRuntime.open(tmp_path, RagSettings(keyword_refresh_delay_s=0.0, chunk_size=100, chunk_overlap=0),
                             MAX_UPLOAD, HashEmbedder(), None, reader, storage=EMBEDDED)
    yield opened
    opened.metadata.close()


async def test_a_recording_becomes_a_time_coded_transcript(runtime, briefing) -> None:
    samples, rate, spoken_at = briefing
    events = await collect(runtime.pipeline.upload("acme", "briefing.m4a", "audio/mp4", encode(samples, rate, "m4a")))
    progress = [e for e in events if isinstance(e, IngestProgress)]
    assert progress[0].stage is IngestStage.RECEIVED
    heard = [e for e in progress if e.stage is IngestStage.TRANSCRIBED]
    assert heard[0].done == 0 and heard[-1].done == heard[-1].total == round(len(samples) / rate)
    assert "language: en" in heard[-1].message
    document = events[-1].document
    assert isinstance(events[-1], IngestOutcome) and document.status is DocumentStatus.READY
    assert document.file_type == "audio" and document.content_type == "audio/mp4"
    [section] = runtime.metadata.sections(document.document_id)
    for sentence in SENTENCES:
        assert contains_words(section.text, sentence, tolerance=2), section.text
    chunks = runtime.metadata.document_chunks("acme", document.document_id)
    assert len(chunks) >= 2  # 100-character chunks: the time ranges differ
    for chunk in chunks:
        p = chunk.provenance
        assert section.text[p.char_start:p.char_end] == chunk.text
        assert 0 <= p.start_seconds < p.end_seconds <= len(samples) / rate + 0.05
        assert p.time_starts and (p.start_seconds, p.end_seconds) == time_range(p.time_starts, p.char_start,
                                                                                p.char_end)
    # The chunk holding the meeting point was spoken while the second sentence was.
    [meeting] = [c for c in chunks if "meeting point" in c.text.lower()]
    offset = meeting.text.lower().index("meeting point") + meeting.provenance.char_start
    start, end = time_range(meeting.provenance.time_starts, offset, offset + len("meeting point"))
    assert spoken_at[1][0] - 0.6 < start and end < spoken_at[1][1] + 0.6
    assert runtime.metadata.get_chunks("acme", [meeting.chunk_id])[0].provenance == meeting.provenance


@pytest.mark.parametrize("case,reason", [
    ("corrupt", "CORRUPT_FILE"), ("silent", "NO_SPEECH"), ("too long", "MEDIA_TOO_LONG"),
    ("too large", "MEDIA_TOO_LARGE"), ("video only", "NO_AUDIO_TRACK"),
])
async def test_bad_media_is_refused_and_nothing_is_stored(runtime, briefing, case, reason) -> None:
    samples, rate, _ = briefing
    data = {
        "corrupt": lambda: b"ID3" + bytes(range(256)) * 40,
        "silent": lambda: encode(silence(5.0), 22050, "ogg"),
        "too long": lambda: encode(np.concatenate([samples, samples, samples]), rate, "mp3"),  # 41 s > 30 s
        "too large": lambda: encode(np.tile(samples, 6), rate, "wav")[: 2 * 1024 * 1024] + b"\0" * 4096,
        "video only": _video_only,
    }[case]()
    name = {"corrupt": "x.mp3", "silent": "x.ogg", "too long": "x.mp3", "too large": "x.wav", "video only": "x.mp4"}
    with pytest.raises(DomainError) as refused:
        await collect(runtime.pipeline.upload("acme", name[case], "", data))
    assert refused.value.reason == reason, refused.value.message
    assert runtime.metadata.count_documents("acme") == 0
    assert runtime.metadata.known_chunk_ids() == set()
    assert not runtime.blobs.path("acme", hashlib.sha256(data).hexdigest()).exists()


async def test_speech_switched_off_refuses_recordings(tmp_path, briefing) -> None:
    samples, rate, _ = briefing
    runtime = RagRuntime.open(tmp_path, RagSettings(), MAX_UPLOAD, HashEmbedder(), storage=EMBEDDED)
    try:
        with pytest.raises(DomainError) as refused:
            await collect(runtime.pipeline.upload("acme", "a.flac", "audio/flac", encode(samples, rate, "flac")))
        assert refused.value.reason == "SPEECH_UNAVAILABLE"
    finally:
        runtime.metadata.close()


def _video_only() -> bytes:
    import io
    from fractions import Fraction

    import av

    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format="mp4") as container:
        stream = container.add_stream("mpeg4", rate=5)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for index in range(5):
            frame = av.VideoFrame.from_ndarray(np.zeros((48, 64, 3), np.uint8), format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, 5)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return buffer.getvalue()


class _CountingPool(ThreadPoolExecutor):
    """The speech pool, telling the test each time a parse is handed to it."""

    def __init__(self, workers: int, on_submit: Callable[[], None]) -> None:
        super().__init__(workers, thread_name_prefix="held-speech")
        self._on_submit = on_submit

    def submit(self, fn, /, *args, **kwargs):
        future = super().submit(fn, *args, **kwargs)
        self._on_submit()
        return future


class _HeldTranscriber:
    """A speech port that holds every transcription until released (a fake at the port's boundary).

    ``all_queued`` is set once ``expected`` parses have been handed to its pool and one of them is
    transcribing: the state the test needs, awaited rather than guessed with a sleep."""

    model_name = "held"

    def __init__(self, workers: int, expected: int) -> None:
        self.release = threading.Event()
        self.waiting = 0
        self.submitted = 0
        self.all_queued = asyncio.Event()
        self._expected = expected
        self._loop = asyncio.get_running_loop()
        self._pool = _CountingPool(workers, lambda: self._loop.call_soon_threadsafe(self._submitted))

    def _submitted(self) -> None:
        self.submitted += 1
        self._check()

    def _check(self) -> None:
        if self.submitted >= self._expected and self.waiting:
            self.all_queued.set()

    def executor(self, lane):
        return self._pool

    def transcribe(self, audio, on_progress=None, lane=None):
        from services.speech import Segment, Transcript

        self.waiting += 1
        self._loop.call_soon_threadsafe(self._check)
        self.release.wait(60)
        return Transcript((Segment(0.0, 1.0, "held"),), "en", 1.0, audio.seconds, audio.seconds, "held")

    def close(self) -> None:
        self.release.set()
        self._pool.shutdown(wait=False, cancel_futures=True)


async def test_recordings_waiting_for_the_speech_pool_do_not_block_other_uploads(tmp_path, briefing) -> None:
    samples, rate, _ = briefing
    # More recordings than the event loop's default thread pool has threads (min(32, cores + 4)).
    recordings = [encode(np.concatenate([samples, silence(0.1 * i)]), rate, "ogg") for i in range(10)]
    held = _HeldTranscriber(workers=1, expected=len(recordings))
    runtime = RagRuntime.open(tmp_path, RagSettings(keyword_refresh_delay_s=0.0), MAX_UPLOAD, HashEmbedder(), None,
                              AudioReader(held, max_seconds=30, max_bytes=2 * 1024 * 1024), storage=EMBEDDED)
    try:
        waiting = [asyncio.create_task(collect(runtime.pipeline.upload("acme", f"r{i}.ogg", "", data)))
                   for i, data in enumerate(recordings)]
        await asyncio.wait_for(held.all_queued.wait(), 60)  # all ten at the speech pool, one transcribing
        text = await asyncio.wait_for(collect(runtime.pipeline.upload(
            "acme", "notes.txt", "text/plain", b"The ferry leaves at dawn from the east quay.")), 60)
        assert text[-1].document.status is DocumentStatus.READY
        assert held.waiting == 1 and not any(task.done() for task in waiting)  # one transcribing, nine queued
        held.release.set()
        done = await asyncio.wait_for(asyncio.gather(*waiting), 120)
        assert all(events[-1].document.status is DocumentStatus.READY for events in done)
    finally:
        held.close()
        runtime.metadata.close()
