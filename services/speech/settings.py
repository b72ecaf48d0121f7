"""Settings of speech-to-text, read from ``DOCUTHINKER_SPEECH_*`` environment variables.

The RAG service reads them once at start: they govern audio/video uploads and spoken questions.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class SpeechSettings(BaseSettings):
    """Whisper model, thread budget and media limits of transcription."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_SPEECH_", frozen=True, extra="ignore")

    enabled: bool = True
    """Transcribe audio and video uploads and spoken questions. Off, or without the model packages,
    such requests are refused (FAILED_PRECONDITION, SPEECH_UNAVAILABLE)."""
    model: Literal["base", "tiny.en"] = "base"
    """Whisper model: "base" (multilingual, language detected) or "tiny.en" (English only, about 4x less compute)."""
    cpu_threads: int = Field(default=1, ge=1, le=64)
    """CPU threads of one transcription; with ``workers`` this bounds the cores speech may take from queries."""
    workers: int = Field(default=1, ge=1, le=16)
    """Uploads transcribed at the same time; more wait in line (spoken questions have their own worker)."""
    beam_size: int = Field(default=1, ge=1, le=10)
    """Beam width of decoding; 1 (greedy) is the fastest, wider beams cost more compute for a little accuracy."""
    language: str = Field(default="", pattern=r"^([a-z]{2,3})?$")
    """Spoken language as an ISO code (e.g. "en"); empty: detected per recording (base model only)."""
    max_media_seconds: float = Field(default=4 * 3600.0, gt=0)
    """Longest audio or video upload, in seconds of audio; longer is refused (INVALID_ARGUMENT, reason MEDIA_TOO_LONG)."""
    max_media_bytes: int = Field(default=200 * 1024 * 1024, ge=1)
    """Largest audio or video upload in bytes (the mesh-wide upload limit applies too)."""
    max_question_seconds: float = Field(default=60.0, gt=0)
    """Longest spoken question, in seconds; longer is refused (INVALID_ARGUMENT, reason MEDIA_TOO_LONG)."""
    cache_dir: str = ""
    """Where the assembled model directory is kept (keyed by its hashes); empty: ``~/.cache/docuthinker/speech``."""
