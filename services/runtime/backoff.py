"""The one backoff policy of the mesh's retry sites: exponential, capped, with jitter.

Used wherever a failed piece of work is tried again later (the graph-sync outbox, the dead-letter queue, source
syncs, the launcher's restarts). The jitter only ever shortens a delay, by up to ``jitter`` of it, so the cap and
the settings that name a delay stay upper bounds; it spreads the retries of replicas that failed together (every
rag replica's outbox against one graph that went away) so they do not all come back in the same instant.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

JITTER = 0.2
"""Share of a delay taken off at random: enough to spread replicas' retries, small enough to keep the schedule."""
_MAX_DOUBLINGS = 60  # 2**60 times any initial delay is past every cap; bounds the float arithmetic


@dataclass(frozen=True)
class Backoff:
    initial_s: float
    """Delay after the first failure."""
    max_s: float
    """The cap: no delay is longer (not even the first, when ``initial_s`` is larger)."""
    jitter: float = JITTER
    """Share of each delay taken off at random (0: none, the exact doubling schedule)."""
    random: Callable[[], float] = field(default=random.random, compare=False, repr=False)
    """A number in [0, 1) per delay (a seeded one in tests)."""

    def __post_init__(self) -> None:
        if self.initial_s < 0 or self.max_s < 0:
            raise ValueError(f"backoff delays must not be negative (got {self.initial_s}, {self.max_s})")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"backoff jitter must be in [0, 1) (got {self.jitter})")

    def delay_s(self, failures: int) -> float:
        """Delay after the ``failures``-th consecutive failure (1-based): doubling from ``initial_s`` up to
        ``max_s``, less up to ``jitter`` of it."""
        doublings = min(max(failures - 1, 0), _MAX_DOUBLINGS)
        delay = min(self.max_s, self.initial_s * 2.0**doublings)
        return delay * (1 - self.jitter * self.random()) if self.jitter else delay
