"""Char spans of a transcript to the seconds they were spoken at."""

from __future__ import annotations

from services.rag.ingest.parsers.audio import transcript_section
from services.rag.ingest.timecodes import time_range, touched
from services.speech import Segment, Transcript

TRANSCRIPT = Transcript(
    segments=(Segment(0.5, 2.0, "First sentence."), Segment(2.4, 5.1, "Second one here."), Segment(6.0, 7.5, "Last.")),
    language="en", language_probability=0.99, duration=8.0, speech_seconds=6.0, model="tiny.en")


def test_the_transcript_section_marks_every_segment() -> None:
    section = transcript_section(TRANSCRIPT)
    assert section.text == "First sentence.\nSecond one here.\nLast."
    assert section.time_starts == ((0, 0.5, 2.0), (16, 2.4, 5.1), (33, 6.0, 7.5))
    for (offset, _, _), segment in zip(section.time_starts, TRANSCRIPT.segments):
        assert section.text[offset:].startswith(segment.text)


def test_a_span_takes_the_times_of_the_segments_it_touches() -> None:
    starts = transcript_section(TRANSCRIPT).time_starts
    assert time_range(starts, 0, 5) == (0.5, 2.0)
    assert time_range(starts, 17, 23) == (2.4, 5.1)  # inside the second sentence
    assert time_range(starts, 10, 20) == (0.5, 5.1)  # across the first two
    assert time_range(starts, 33, 38) == (6.0, 7.5)
    assert time_range(starts, 0, 38) == (0.5, 7.5)
    assert touched(starts, 16, 32) == ((16, 2.4, 5.1),)


def test_no_segments_or_an_empty_span_has_no_time() -> None:
    assert time_range((), 0, 10) == (0.0, 0.0)
    assert time_range(transcript_section(TRANSCRIPT).time_starts, 5, 5) == (0.0, 0.0)
