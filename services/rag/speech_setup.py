"""Wires speech-to-text into the RAG service: one transcriber for uploads and spoken questions.

The model loads (hash-checked) in the background after start, so the first recording does not
pay for it and startup does not wait for it; a missing model package fails only recordings.
"""

from __future__ import annotations

import asyncio
import logging

from services.rag.ingest.parsers import AudioReader
from services.runtime.errors import DomainError
from services.speech import SpeechSettings, WhisperTranscriber

log = logging.getLogger("docuthinker.rag.speech")


def build_speech(settings: SpeechSettings,
                 max_upload_bytes: int) -> tuple[WhisperTranscriber | None, AudioReader | None]:
    if not settings.enabled:
        return None, None
    transcriber = WhisperTranscriber(settings)
    reader = AudioReader(transcriber, settings.max_media_seconds, min(settings.max_media_bytes, max_upload_bytes))
    return transcriber, reader


async def warm_up(transcriber: WhisperTranscriber | None) -> None:
    if transcriber is None:
        return
    try:
        await asyncio.to_thread(transcriber.warm_up)
    except DomainError as exc:
        log.warning("speech model unavailable: recordings will be refused",
                    extra={"fields": {"error": exc.message}})
