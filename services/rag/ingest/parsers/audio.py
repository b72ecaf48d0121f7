"""Audio and video documents: the first audio track, transcribed; the transcript is the text.

Decoding (PyAV) and its checks (corrupt, no audio track, empty, too long) and voice-activity
detection (no speech) all run before ``on_progress`` is first called, so bad media fails the upload
with its own status before the stream starts; then progress reports seconds transcribed.
The transcript is one section, one line per spoken segment, whose ``time_starts`` map every
character back to the seconds it was spoken at.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.rag.documents import ParsedDocument, Section
from services.rag.ingest.parsers.limits import ParseLimits, too_large
from services.speech.assets import unavailable
from services.speech.media import decode
from services.speech.media import too_large as media_too_large
from services.speech.transcriber import Progress, SpeechToText, Transcript


@dataclass(frozen=True)
class AudioReader:
    """What the pipeline needs to read recordings."""

    transcriber: SpeechToText
    max_seconds: float
    max_bytes: int


def parse_audio(data: bytes, limits: ParseLimits, reader: AudioReader | None,
                on_progress: Progress | None = None) -> ParsedDocument:
    if reader is None:
        raise unavailable("it is switched off (DOCUTHINKER_SPEECH_ENABLED=false)")
    if len(data) > reader.max_bytes:
        raise media_too_large(len(data), reader.max_bytes)
    audio = decode(data, reader.max_seconds)
    transcript = reader.transcriber.transcribe(audio, on_progress)
    section = transcript_section(transcript)
    if len(section.text) > limits.max_text_chars:
        raise too_large("extracted characters", limits.max_text_chars, "TOO_MUCH_TEXT")
    return ParsedDocument((section,))


def transcript_section(transcript: Transcript) -> Section:
    lines: list[str] = []
    time_starts: list[tuple[int, float, float]] = []
    offset = 0
    for segment in transcript.segments:
        time_starts.append((offset, segment.start, segment.end))
        lines.append(segment.text)
        offset += len(segment.text) + 1
    return Section(text="\n".join(lines), time_starts=tuple(time_starts))
