"""Spoken questions: a short recording is transcribed, then answered like a typed question.

Transcription runs on the speech service's question lane (its own worker), so a question is never
queued behind a long upload being transcribed.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Sequence
from dataclasses import dataclass

from services.rag.answers.answering import AnswerService
from services.rag.answers.model import GroundedAnswer
from services.speech.assets import unavailable
from services.speech.media import decode, too_large
from services.speech.transcriber import Lane, SpeechToText, Transcript

MAX_QUESTION_BYTES = 25 * 1024 * 1024


@dataclass(frozen=True)
class SpokenAnswer:
    transcript: Transcript
    answer: GroundedAnswer


class SpokenQuestions:
    def __init__(self, answers: AnswerService, transcriber: SpeechToText | None, max_seconds: float,
                 max_bytes: int = MAX_QUESTION_BYTES) -> None:
        self._answers = answers
        self._transcriber = transcriber
        self._max_seconds = max_seconds
        self._max_bytes = max_bytes

    def check_size(self, size: int) -> None:
        """Refuses a recording of ``size`` bytes over the limit (also while one is still arriving)."""
        if size > self._max_bytes:
            raise too_large(size, self._max_bytes)

    async def ask(self, tenant: str, recording: bytes, top_k: int, document_ids: Sequence[str]) -> SpokenAnswer:
        if self._transcriber is None:
            raise unavailable("it is switched off (DOCUTHINKER_SPEECH_ENABLED=false)")
        self.check_size(len(recording))
        transcript = await asyncio.get_running_loop().run_in_executor(
            self._transcriber.executor(Lane.QUESTION),
            functools.partial(contextvars.copy_context().run, self._transcribe, recording))
        answer = await self._answers.answer(tenant, transcript.text, top_k, list(document_ids))
        return SpokenAnswer(transcript, answer)

    def _transcribe(self, recording: bytes) -> Transcript:
        assert self._transcriber is not None
        audio = decode(recording, self._max_seconds, "audio")
        return self._transcriber.transcribe(audio, None, Lane.QUESTION)
