"""Decoding real media made in the test: every container, and each way media can be bad."""

from __future__ import annotations

import io
import struct
from fractions import Fraction

import av
import numpy as np
import pytest

from services.runtime.errors import InvalidArgument
from services.speech.media import decode

from .media_fixtures import CONTAINERS, encode


@pytest.fixture(scope="module")
def spoken(briefing):
    samples, rate, _ = briefing
    return samples, rate


@pytest.mark.parametrize("suffix", sorted(CONTAINERS))
def test_every_container_decodes_to_16k_mono(spoken, suffix) -> None:
    samples, rate = spoken
    audio = decode(encode(samples, rate, suffix), max_seconds=60)
    assert audio.samples.dtype == np.float32 and audio.samples.ndim == 1
    assert abs(audio.seconds - len(samples) / rate) < 0.15, (suffix, audio.seconds)
    assert np.abs(audio.samples).max() > 0.05  # the speech survived the round trip


def test_garbage_is_corrupt() -> None:
    with pytest.raises(InvalidArgument) as refused:
        decode(b"this is not a recording at all" * 50, 60)
    assert refused.value.reason == "CORRUPT_FILE"


def test_a_truncated_header_is_corrupt(spoken) -> None:
    samples, rate = spoken
    data = encode(samples, rate, "m4a")
    with pytest.raises(InvalidArgument) as refused:
        decode(data[: len(data) // 3][:64], 60)
    assert refused.value.reason == "CORRUPT_FILE"


def test_empty_bytes_and_a_container_without_samples_are_empty() -> None:
    with pytest.raises(InvalidArgument) as refused:
        decode(b"", 60)
    assert refused.value.reason == "EMPTY_MEDIA"
    header_only = _wav_header(data_bytes=0)
    with pytest.raises(InvalidArgument) as refused:
        decode(header_only, 60)
    assert refused.value.reason in ("EMPTY_MEDIA", "CORRUPT_FILE")


def test_video_without_sound_has_no_audio_track() -> None:
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format="mp4") as container:
        stream = container.add_stream("mpeg4", rate=5)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for index in range(5):
            frame = av.VideoFrame.from_ndarray(np.zeros((48, 64, 3), np.uint8), format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, 5)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    with pytest.raises(InvalidArgument) as refused:
        decode(buffer.getvalue(), 60)
    assert refused.value.reason == "NO_AUDIO_TRACK" and "video" in refused.value.message


def test_a_declared_duration_over_the_limit_is_refused_before_decoding(spoken) -> None:
    # A real FLAC whose STREAMINFO claims five hours of samples (the low 36 bits of bytes 18-25).
    samples, rate = spoken
    data = bytearray(encode(samples, rate, "flac"))
    assert data[:4] == b"fLaC"
    packed = int.from_bytes(data[18:26], "big")
    packed = (packed & ~((1 << 36) - 1)) | (5 * 3600 * rate)
    data[18:26] = packed.to_bytes(8, "big")
    with pytest.raises(InvalidArgument) as refused:
        decode(bytes(data), max_seconds=3600)
    assert refused.value.reason == "MEDIA_TOO_LONG" and refused.value.metadata["limit_seconds"] == "3600"
    assert float(refused.value.metadata["seconds"]) == pytest.approx(5 * 3600, rel=0.01)


def test_decoded_samples_over_the_limit_are_refused(spoken) -> None:
    samples, rate = spoken  # about 13.7 s
    with pytest.raises(InvalidArgument) as refused:
        decode(encode(samples, rate, "ogg"), max_seconds=5)
    assert refused.value.reason == "MEDIA_TOO_LONG"


def _wav_header(data_bytes: int, rate: int = 8000) -> bytes:
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate, 1, 8)
    return (b"RIFF" + struct.pack("<I", 36 + data_bytes) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
            + b"data" + struct.pack("<I", data_bytes))
