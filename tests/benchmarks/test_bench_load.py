"""The closed-loop load generator, against calls whose capacity is known."""

from __future__ import annotations

import asyncio

from bench.load import LadderConfig, ladder, run_level


def capped(capacity: int, seconds: float):
    """A service that serves ``capacity`` requests at a time, each taking ``seconds``."""
    slots = asyncio.Semaphore(capacity)
    seen: list[str] = []

    async def call(text: str) -> None:
        async with slots:
            seen.append(text)
            await asyncio.sleep(seconds)

    return call, seen


async def test_level_sends_the_requested_number_and_cycles_queries():
    call, seen = capped(4, 0.001)
    result = await run_level(call, ["a", "b", "c"], concurrency=4, requests=10)
    assert len(result.latencies_ms) == 10 and result.errors == 0
    assert seen.count("a") == 4 and seen.count("b") == 3 and seen.count("c") == 3
    assert result.as_dict()["requests"] == 10


async def test_errors_are_counted_not_timed():
    calls = 0

    async def flaky(text: str) -> None:
        nonlocal calls
        calls += 1
        if calls % 2 == 0:
            raise RuntimeError("backend said no")

    result = await run_level(flaky, ["q"], concurrency=2, requests=6)
    assert result.errors == 3 and len(result.latencies_ms) == 3
    assert "backend said no" in result.error_samples[0]


async def test_ladder_stops_once_throughput_flattens_past_the_required_levels():
    # Real sleeps on a shared machine: the levels' QPS carry noise, so the service's steps are kept far from
    # the rule's line: 2 slots double 1 (a 100% gain), 4 clients on 2 slots gain 0%, and "flat" is under 50%.
    call, _ = capped(2, 0.05)
    config = LadderConfig(levels=(1, 2, 4, 8, 16, 32), required=(1, 4), base_requests=12, per_client_requests=2,
                          min_gain=0.5)
    result = await ladder(call, ["q"], config)
    walked = [level["concurrency"] for level in result["levels"]]
    assert walked == [1, 2, 4]  # 4 clients gain nothing over 2 on a 2-slot service
    assert result["saturation"]["knee_concurrency"] == 2
    qps = {level["concurrency"]: level["qps"] for level in result["levels"]}
    assert qps[2] > 1.3 * qps[1]
