"""Maps a character span of a transcript to the seconds of speech it covers.

A transcript section lists its spoken segments as (char offset, start s, end s); a segment owns
the text from its offset up to the next segment's offset. A span's time range runs from the start
of the first segment it touches to the end of the last one.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

TimeStarts = Sequence[tuple[int, float, float]]


def touched(time_starts: TimeStarts, start: int, end: int) -> tuple[tuple[int, float, float], ...]:
    """The segments whose text overlaps ``[start, end)``."""
    if not time_starts or end <= start:
        return ()
    offsets = [offset for offset, _, _ in time_starts]
    first = max(0, bisect.bisect_right(offsets, start) - 1)
    last = max(first, bisect.bisect_left(offsets, end) - 1)
    return tuple(tuple(segment) for segment in time_starts[first:last + 1])  # type: ignore[misc]


def time_range(time_starts: TimeStarts, start: int, end: int) -> tuple[float, float]:
    """(start s, end s) of the speech behind ``text[start:end]``; (0, 0) when there are no segments."""
    segments = touched(time_starts, start, end)
    if not segments:
        return 0.0, 0.0
    return min(s for _, s, _ in segments), max(e for _, _, e in segments)
