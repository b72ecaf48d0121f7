"""Speech-to-text behind a small interface: ``SpeechToText.transcribe(audio) -> Transcript``.

``WhisperTranscriber`` runs faster-whisper (CTranslate2, int8 on CPU) on verified packaged weights.
Work runs in bounded thread pools: ``workers`` threads for documents and one for spoken questions, so
a long recording never delays a question, and each transcription uses at most ``cpu_threads`` cores,
so query serving keeps the rest. Voice-activity detection (Silero, bundled with faster-whisper)
runs first: a recording without speech is refused before any decoding work.
"""

from __future__ import annotations

import logging
import pathlib
import re
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from services.runtime.devices import compute_device
from services.runtime.errors import InvalidArgument
from services.speech.assets import ASSETS, ModelAsset, model_dir, unavailable
from services.speech.media import SAMPLE_RATE, Audio, media_error
from services.speech.settings import SpeechSettings

log = logging.getLogger("docuthinker.speech")

Progress = Callable[[float, float, str], None]
"""``(seconds_done, seconds_total, language)``: once with 0 (and no language yet) when decoding starts,
then after every segment."""


class Lane(Enum):
    DOCUMENT = "document"
    QUESTION = "question"


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Transcript:
    segments: tuple[Segment, ...]
    language: str
    language_probability: float
    duration: float
    """Seconds of audio in the recording."""
    speech_seconds: float
    """Seconds the voice-activity detector kept."""
    model: str

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.segments)


class SpeechToText(Protocol):
    @property
    def model_name(self) -> str: ...

    def transcribe(self, audio: Audio, on_progress: Progress | None = None,
                   lane: Lane = Lane.DOCUMENT) -> Transcript: ...

    def executor(self, lane: Lane) -> Executor:
        """The lane's pool: run a whole parse in it, so waiting callers hold none of the event loop's threads."""
        ...


def no_speech(field: str = "file") -> InvalidArgument:
    return media_error("NO_SPEECH", "the recording contains no speech (silence or noise only)", field)


_SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")


def sentences(piece, total: float) -> list[Segment]:
    """One Whisper segment split into sentences at word timestamps (Whisper's own segments can span
    several sentences, 30 s at worst): every sentence gets the times its words were spoken at."""
    words = [w for w in (piece.words or ()) if w.word.strip()]
    if not words:
        text = " ".join(piece.text.split())
        return [Segment(round(float(piece.start), 2), round(float(min(piece.end, total)), 2), text)] if text else []
    out: list[Segment] = []
    current: list = []
    for word in words:
        current.append(word)
        if _SENTENCE_END.search(word.word.strip()) or word is words[-1]:
            text = " ".join("".join(w.word for w in current).split())
            out.append(Segment(round(float(current[0].start), 2), round(float(min(current[-1].end, total)), 2), text))
            current = []
    return out


class WhisperTranscriber:
    """Thread-safe; the model loads (hash-checked) on first use, or at ``warm_up``."""

    def __init__(self, settings: SpeechSettings) -> None:
        self.settings = settings
        self.asset: ModelAsset = ASSETS[settings.model]
        self._model = None
        self._load_lock = threading.Lock()
        self._local = threading.local()
        self._documents = ThreadPoolExecutor(settings.workers, thread_name_prefix="speech-doc",
                                             initializer=self._mark, initargs=(Lane.DOCUMENT,))
        self._questions = ThreadPoolExecutor(1, thread_name_prefix="speech-ask",
                                             initializer=self._mark, initargs=(Lane.QUESTION,))

    @property
    def model_name(self) -> str:
        return f"whisper-{self.asset.name}"

    def warm_up(self) -> None:
        self._load()

    def close(self) -> None:
        self._documents.shutdown(wait=False, cancel_futures=True)
        self._questions.shutdown(wait=False, cancel_futures=True)

    def executor(self, lane: Lane) -> Executor:
        return self._questions if lane is Lane.QUESTION else self._documents

    def transcribe(self, audio: Audio, on_progress: Progress | None = None,
                   lane: Lane = Lane.DOCUMENT) -> Transcript:
        """Runs on the lane's pool: inline when called from it, else queued there (this thread waits)."""
        field = "audio" if lane is Lane.QUESTION else "file"
        if getattr(self._local, "lane", None) is lane:
            return self._run(audio, on_progress, field)
        return self.executor(lane).submit(self._run, audio, on_progress, field).result()

    def _mark(self, lane: Lane) -> None:
        self._local.lane = lane

    def _load(self):
        with self._load_lock:
            if self._model is None:
                from faster_whisper import WhisperModel

                cache = pathlib.Path(self.settings.cache_dir) if self.settings.cache_dir else None
                try:
                    directory = model_dir(self.asset, cache)
                except OSError as exc:
                    raise unavailable(f"the {self.asset.name} model could not be assembled ({exc})") from exc
                device = "cuda" if compute_device().startswith("cuda") else "cpu"
                self._model = WhisperModel(
                    str(directory), device=device, compute_type="int8" if device == "cpu" else "float16",
                    cpu_threads=self.settings.cpu_threads, num_workers=self.settings.workers + 1,
                    local_files_only=True)
                log.info("speech model loaded", extra={"fields": {
                    "model": self.asset.name, "dir": str(directory), "cpu_threads": self.settings.cpu_threads}})
            return self._model

    def _run(self, audio: Audio, on_progress: Progress | None, field: str) -> Transcript:
        from faster_whisper.vad import VadOptions, get_speech_timestamps

        vad = VadOptions(min_silence_duration_ms=500)
        speech = get_speech_timestamps(audio.samples, vad)
        if not speech:
            raise no_speech(field)
        model = self._load()
        total = audio.seconds
        if on_progress is not None:
            on_progress(0.0, total, "")
        language = self.settings.language or ("en" if not self.asset.multilingual else None)
        pieces, info = model.transcribe(
            audio.samples, language=language, beam_size=self.settings.beam_size, vad_filter=True,
            vad_parameters=vad, condition_on_previous_text=False, word_timestamps=True)
        segments: list[Segment] = []
        for piece in pieces:
            segments.extend(sentences(piece, total))
            if on_progress is not None:
                on_progress(min(piece.end, total), total, info.language)
        if not segments:
            raise no_speech(field)
        if on_progress is not None:
            on_progress(total, total, info.language)
        kept = sum(s["end"] - s["start"] for s in speech) / SAMPLE_RATE
        return Transcript(segments=tuple(segments), language=info.language,
                          language_probability=round(float(info.language_probability), 3),
                          duration=round(total, 2), speech_seconds=round(kept, 2), model=self.asset.name)
