"""What the router saw: one record per provider call, and running totals per provider.

``CallRecord`` is what listeners (the orchestrator's circuit breakers and cost recorder)
receive. Prompt-cache hits are counted per provider: a call is a hit when it read any
tokens from the vendor's cache (``cache_read_tokens > 0``), else a miss.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from services.providers.base import GenerationResult, ProviderError, Usage


@dataclass(frozen=True)
class CallRecord:
    provider: str
    task: str
    tenant: str
    latency_s: float
    result: GenerationResult | None = None
    error: ProviderError | None = None
    usage: Usage = field(default_factory=Usage)
    """Tokens and cost of the call; also set when a completed answer was rejected (bad JSON)."""

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class ProviderStats:
    calls: int = 0
    failures: int = 0
    usage: Usage = field(default_factory=Usage)
    cache_hits: int = 0
    cache_misses: int = 0

    @property
    def cache_hit_rate(self) -> float:
        total = self.cache_hits + self.cache_misses
        return self.cache_hits / total if total else 0.0


class StatsBook:
    """Running totals; thread-safe because providers may be called from several loops."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stats: dict[str, ProviderStats] = {}

    def record(self, call: CallRecord) -> None:
        with self._lock:
            current = self._stats.get(call.provider, ProviderStats())
            hit = call.usage.cache_read_tokens > 0
            completed = call.result is not None or call.usage != Usage()
            self._stats[call.provider] = ProviderStats(
                calls=current.calls + 1,
                failures=current.failures + (0 if call.ok else 1),
                usage=current.usage + call.usage,
                cache_hits=current.cache_hits + (1 if completed and hit else 0),
                cache_misses=current.cache_misses + (1 if completed and not hit else 0),
            )

    def snapshot(self) -> dict[str, ProviderStats]:
        with self._lock:
            return dict(self._stats)
