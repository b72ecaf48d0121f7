"""Decodes any audio or video container PyAV (FFmpeg) reads into 16 kHz mono samples for Whisper.

Limits are enforced while decoding, not after: a container declaring a longer duration is refused
before any sample is decoded, and decoding stops as soon as the samples pass the limit, so a small
file of hours of low-bitrate audio cannot fill memory (16 kHz float32 is 230 MB an hour).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from services.runtime.errors import FieldViolation, InvalidArgument

SAMPLE_RATE = 16_000


@dataclass(frozen=True)
class Audio:
    samples: np.ndarray
    """Mono float32 samples at ``SAMPLE_RATE``."""
    container: str
    """FFmpeg's name of the container format (e.g. "wav", "mov,mp4,m4a,3gp,3g2,mj2")."""
    codec: str

    @property
    def seconds(self) -> float:
        return len(self.samples) / SAMPLE_RATE


def media_error(reason: str, message: str, field: str = "file") -> InvalidArgument:
    return InvalidArgument(message, reason=reason, violations=[FieldViolation(field, message)])


def corrupt_media(why: str, field: str = "file") -> InvalidArgument:
    return InvalidArgument(
        f"the file is not readable audio or video: {why}",
        reason="CORRUPT_FILE",
        metadata={"file_type": "audio"},
        violations=[FieldViolation(field, why)],
    )


def too_long(seconds: float, limit: float) -> InvalidArgument:
    return InvalidArgument(
        f"the recording is longer than the limit of {limit:g} seconds (at least {seconds:.1f} s)",
        reason="MEDIA_TOO_LONG",
        metadata={"limit_seconds": f"{limit:g}", "seconds": f"{seconds:.1f}"},
    )


def too_large(size: int, limit: int) -> InvalidArgument:
    return InvalidArgument(
        f"the recording is larger than the {limit}-byte limit of audio and video files",
        reason="MEDIA_TOO_LARGE",
        metadata={"limit_bytes": str(limit), "size_bytes": str(size)},
    )


def decode(data: bytes, max_seconds: float, field: str = "file") -> Audio:
    """The first audio stream of ``data`` as 16 kHz mono; raises a domain error for bad media."""
    import av

    if not data:
        raise media_error("EMPTY_MEDIA", "the recording is empty (0 bytes)", field)
    try:
        container = av.open(io.BytesIO(data), mode="r", metadata_errors="ignore")
    except (av.FFmpegError, ValueError, UnicodeDecodeError) as exc:
        raise corrupt_media(_describe(exc), field) from exc
    with container:
        streams = container.streams.audio
        if not streams:
            kinds = ", ".join(sorted({s.type for s in container.streams})) or "no streams"
            raise media_error("NO_AUDIO_TRACK", f"the file has no audio track (it has: {kinds})", field)
        stream = streams[0]
        declared = _declared_seconds(container, stream)
        if declared is not None and declared > max_seconds + 1.0:
            raise too_long(declared, max_seconds)
        limit = int((max_seconds + 1.0) * SAMPLE_RATE)
        resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        pieces: list[np.ndarray] = []
        count = 0
        try:
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    count += _take(out, pieces)
                if count > limit:
                    raise too_long(count / SAMPLE_RATE, max_seconds)
            for out in resampler.resample(None):
                count += _take(out, pieces)
        except av.FFmpegError as exc:
            if count == 0:
                raise corrupt_media(_describe(exc), field) from exc
            # A truncated tail: keep what decoded (FFmpeg's own players do the same).
        codec = stream.codec_context.name if stream.codec_context else ""
        format_name = container.format.name if container.format else ""
    samples = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
    if count > (max_seconds + 0.05) * SAMPLE_RATE:
        raise too_long(count / SAMPLE_RATE, max_seconds)
    if len(samples) < SAMPLE_RATE // 10:
        raise media_error("EMPTY_MEDIA", "the recording contains no audio (under 0.1 s of samples)", field)
    return Audio(samples=samples, container=format_name, codec=codec)


def _take(frame, pieces: list[np.ndarray]) -> int:
    array = frame.to_ndarray().reshape(-1).astype(np.float32, copy=False)
    pieces.append(array)
    return len(array)


def _declared_seconds(container, stream) -> float | None:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return container.duration / 1_000_000
    return None


def _describe(exc: Exception) -> str:
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return f"FFmpeg could not read it ({text})"
