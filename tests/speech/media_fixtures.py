"""Real test media made on the spot: espeak-ng speaks known sentences, PyAV re-encodes them.

No recordings are checked in: every container a test needs is produced from text, so a fresh
clone with espeak-ng (tools/system_packages.sh) builds its own fixtures.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from fractions import Fraction

import av
import numpy as np

# (file suffix, PyAV container format, audio codec, sample rate, with a video track)
CONTAINERS = {
    "wav": ("wav", "pcm_s16le", 16000, False),
    "mp3": ("mp3", "libmp3lame", 22050, False),
    "ogg": ("ogg", "libopus", 48000, False),
    "flac": ("flac", "flac", 22050, False),
    "m4a": ("ipod", "aac", 22050, False),
    "webm": ("webm", "libopus", 48000, False),
    "mp4": ("mp4", "aac", 22050, True),
    "mov": ("mov", "aac", 22050, True),
}


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def speak(text: str, words_per_minute: int = 150, voice: str = "en-us") -> bytes:
    """WAV bytes (22.05 kHz mono) of espeak-ng reading ``text``."""
    result = subprocess.run(["espeak-ng", "-v", voice, "-s", str(words_per_minute), "--stdout", text],
                            check=True, capture_output=True, timeout=60)
    return result.stdout


def pcm(wav: bytes) -> tuple[np.ndarray, int]:
    """Mono int16 samples and their rate, decoded by PyAV."""
    with av.open(io.BytesIO(wav)) as container:
        stream = container.streams.audio[0]
        rate = stream.codec_context.sample_rate
        resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)
        parts = [out.to_ndarray().reshape(-1) for frame in container.decode(stream)
                 for out in resampler.resample(frame)]
    return np.concatenate(parts).astype(np.int16), rate


def silence(seconds: float, rate: int = 22050) -> np.ndarray:
    return np.zeros(int(seconds * rate), dtype=np.int16)


def encode(samples: np.ndarray, rate: int, suffix: str) -> bytes:
    """Mono int16 ``samples`` at ``rate`` encoded into the container named by ``suffix``."""
    fmt, codec, out_rate, video = CONTAINERS[suffix]
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format=fmt) as container:
        if video:
            picture = container.add_stream("mpeg4", rate=2)
            picture.width, picture.height, picture.pix_fmt = 64, 48, "yuv420p"
        stream = container.add_stream(codec, rate=out_rate)
        stream.layout = "mono"
        resampler = av.AudioResampler(format=stream.codec_context.format or "s16", layout="mono", rate=out_rate)
        frame_size = 1024
        pts = 0
        for start in range(0, len(samples), frame_size):
            block = samples[start:start + frame_size].reshape(1, -1)
            frame = av.AudioFrame.from_ndarray(block, format="s16", layout="mono")
            frame.sample_rate = rate
            frame.pts, frame.time_base = pts, Fraction(1, rate)
            pts += block.shape[1]
            for out in resampler.resample(frame):
                container.mux(stream.encode(out))
        for out in resampler.resample(None):
            container.mux(stream.encode(out))
        container.mux(stream.encode(None))
        if video:
            seconds = len(samples) / rate
            for index in range(max(1, int(seconds * 2))):
                image = av.VideoFrame.from_ndarray(np.full((48, 64, 3), index * 8 % 255, np.uint8), format="rgb24")
                image.pts = index
                container.mux(picture.encode(image))
            container.mux(picture.encode(None))
    return buffer.getvalue()


def words(text: str) -> list[str]:
    """Lower-case words without punctuation: the normalisation of every transcript comparison."""
    return re.findall(r"[a-z0-9']+", text.lower().replace("-", " "))


def contains_words(transcript: str, sentence: str, tolerance: int = 0) -> bool:
    """True when the sentence's words appear in order in the transcript, with at most ``tolerance`` missing."""
    have, want = words(transcript), words(sentence)
    position, missing = 0, 0
    for word in want:
        try:
            position = have.index(word, position) + 1
        except ValueError:
            missing += 1
    return missing <= tolerance


def speech_extent(samples: np.ndarray, rate: int, threshold: int = 300) -> tuple[float, float]:
    """(first, last) second where the signal is louder than ``threshold``."""
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > threshold)
    return (float(loud[0]) / rate, float(loud[-1]) / rate) if len(loud) else (0.0, 0.0)


def recording(sentences: list[str], gap_s: float = 1.0, lead_s: float = 0.8,
              tail_s: float = 0.5) -> tuple[np.ndarray, int, list[tuple[float, float]]]:
    """The sentences spoken one after another with silences between them, and where each is heard (s)."""
    parts, intervals, offset = [], [], 0
    rate = 22050
    lead = silence(lead_s, rate)
    parts.append(lead)
    offset += len(lead)
    for index, sentence in enumerate(sentences):
        samples, rate = pcm(speak(sentence))
        first, last = speech_extent(samples, rate)
        intervals.append((offset / rate + first, offset / rate + last))
        parts.append(samples)
        offset += len(samples)
        pause = silence(gap_s if index < len(sentences) - 1 else tail_s, rate)
        parts.append(pause)
        offset += len(pause)
    return np.concatenate(parts), rate, intervals
