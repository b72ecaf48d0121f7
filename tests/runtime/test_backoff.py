"""The one backoff policy of the retry sites: doubling, capped, and jitter that only ever shortens a delay."""

from __future__ import annotations

import random

import pytest

from services.runtime.backoff import JITTER, Backoff


def test_without_jitter_it_doubles_up_to_its_cap() -> None:
    policy = Backoff(initial_s=2, max_s=30, jitter=0)
    assert [policy.delay_s(n) for n in range(1, 7)] == [2, 4, 8, 16, 30, 30]
    assert policy.delay_s(10_000) == 30 and policy.delay_s(0) == 2
    assert Backoff(initial_s=60, max_s=30, jitter=0).delay_s(1) == 30
    assert Backoff(initial_s=0, max_s=30).delay_s(5) == 0  # the launcher's "restart at once"


def test_jitter_spreads_delays_below_the_schedule_and_never_past_the_cap() -> None:
    policy = Backoff(initial_s=2, max_s=30, random=random.Random(7).random)
    assert policy.jitter == JITTER
    for failures, exact in ((1, 2), (3, 8), (12, 30)):
        delays = [policy.delay_s(failures) for _ in range(200)]
        assert all(exact * (1 - JITTER) <= d <= exact for d in delays)
        assert len(set(delays)) > 100  # replicas that failed together come back apart


def test_the_extremes_of_the_random_draw() -> None:
    assert Backoff(10, 10, jitter=0.5, random=lambda: 0.0).delay_s(1) == 10
    assert Backoff(10, 10, jitter=0.5, random=lambda: 0.999).delay_s(1) == pytest.approx(5.005)


@pytest.mark.parametrize("initial_s, max_s, jitter", [(-1, 1, 0), (1, -1, 0), (1, 2, 1.0), (1, 2, -0.1)])
def test_a_policy_that_makes_no_sense_is_refused(initial_s, max_s, jitter) -> None:
    with pytest.raises(ValueError):
        Backoff(initial_s, max_s, jitter)
