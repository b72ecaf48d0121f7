"""A closed-loop load generator: ``concurrency`` clients, each sending its next request when the last returns.

Every request's latency is timed on the client, from the call to the complete reply (body
parsed). Throughput is completed requests over the wall time of the whole level. A failed
request counts as an error and is not part of the latencies (the first few messages are kept,
so a report shows why); callers treat any error as a failed measurement.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from bench.stats import latency_summary, saturated, saturation_point

Call = Callable[[str], Awaitable[object]]


@dataclass
class LevelResult:
    concurrency: int
    latencies_ms: list[float]
    wall_s: float
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)

    @property
    def qps(self) -> float:
        return len(self.latencies_ms) / self.wall_s if self.wall_s else 0.0

    def as_dict(self) -> dict:
        summary = latency_summary(self.latencies_ms) if self.latencies_ms else {"n": 0}
        return {"concurrency": self.concurrency, "requests": len(self.latencies_ms) + self.errors,
                "errors": self.errors, "error_samples": self.error_samples, "wall_s": round(self.wall_s, 3),
                "qps": round(self.qps, 2), "latency_ms": summary}


async def run_level(call: Call, queries: Sequence[str], concurrency: int, requests: int) -> LevelResult:
    """Sends ``requests`` calls (cycling through ``queries``) from ``concurrency`` clients."""
    if not queries:
        raise ValueError("no queries")
    next_index = 0
    latencies: list[float] = []
    errors: list[str] = []

    async def client() -> None:
        nonlocal next_index
        while next_index < requests:
            text = queries[next_index % len(queries)]
            next_index += 1
            started = time.perf_counter()
            try:
                await call(text)
            except Exception as exc:  # noqa: BLE001 - counted and reported, the level goes on
                errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
                continue
            latencies.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    return LevelResult(concurrency, latencies, wall, len(errors), errors[:3])


@dataclass(frozen=True)
class LadderConfig:
    """Concurrency levels to walk and how many requests each level sends."""

    levels: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    required: tuple[int, ...] = (1, 4, 16)
    """Levels always measured (the latency table); the walk stops past these once QPS flattens."""
    base_requests: int = 40
    per_client_requests: int = 2
    """Requests at level c: base_requests + per_client_requests * c (every client sends a few)."""
    min_gain: float = 0.1
    """A level adding less than this share of throughput over the previous one counts as saturated."""

    def requests(self, concurrency: int) -> int:
        return self.base_requests + self.per_client_requests * concurrency


async def ladder(call: Call, queries: Sequence[str], config: LadderConfig) -> dict:
    """Walks the concurrency levels until throughput stops growing (and the required ones are done)."""
    results: list[LevelResult] = []
    for level in config.levels:
        results.append(await run_level(call, queries, level, config.requests(level)))
        curve = [(r.concurrency, r.qps) for r in results]
        if level >= max(config.required) and saturated(curve, config.min_gain):
            break
    curve = [(r.concurrency, r.qps) for r in results]
    return {"levels": [r.as_dict() for r in results], "saturation": saturation_point(curve, config.min_gain),
            "errors": sum(r.errors for r in results)}
