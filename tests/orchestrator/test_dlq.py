from __future__ import annotations

import asyncio
import time

import pytest

from services.orchestrator.dlq import PARKED, REPLAYED, RETRYING, DeadLetterQueue
from services.runtime import request_context
from services.runtime.backoff import Backoff
from services.runtime.errors import FailedPrecondition, NotFound, Unavailable

pytestmark = pytest.mark.store_backends  # every test that uses the database runs on both backends


class Flaky:
    """A handler that fails ``failures`` times, then succeeds; records the tenant each call was given, and
    the tenant its calls to peers would carry (the request context's), which must be the same."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls: list[tuple[dict, str]] = []
        self.propagated: list[str] = []

    async def __call__(self, payload, tenant):
        self.calls.append((dict(payload), tenant))
        self.propagated.append(request_context.current_tenant(default="<none>"))
        if len(self.calls) <= self.failures:
            raise Unavailable("still down")
        return {"ok": True}


def test_enqueue_schedules_the_first_retry(db, clock):
    dlq = DeadLetterQueue(db, max_retries=3, backoff=Backoff(30, 3600, jitter=0), clock=clock)
    letter = dlq.enqueue("nlp.summarize", {"text": "x"}, "UNAVAILABLE", tenant="acme")
    assert letter.state == RETRYING
    assert letter.next_retry_at == clock.now + 30
    letters, counts = dlq.list(tenant="acme")
    assert [entry.id for entry in letters] == [letter.id]
    assert (counts.retrying, counts.parked, counts.replayed) == (1, 0, 0)
    assert dlq.list(tenant="other")[0] == []


async def test_retry_delays_stop_doubling_at_the_cap_and_are_spread_by_jitter(db, clock):
    dlq = DeadLetterQueue(db, max_retries=5, backoff=Backoff(10, 25, jitter=0.2, random=lambda: 0.5), clock=clock)
    dlq.register("op", Flaky(failures=10))
    letter = dlq.enqueue("op", {}, "boom", tenant="acme")
    delays = [letter.next_retry_at - clock.now]
    for _ in range(3):
        clock.advance(delays[-1])
        await dlq.retry_due()
        delays.append(dlq.get(letter.id).next_retry_at - clock.now)
    assert delays == pytest.approx([9, 18, 22.5, 22.5])  # 10, 20, then the cap of 25: each a tenth less


async def test_retries_with_exponential_backoff_then_parks(db, clock):
    dlq = DeadLetterQueue(db, max_retries=3, backoff=Backoff(10, 3600, jitter=0), clock=clock)
    handler = Flaky(failures=10)
    dlq.register("op", handler)
    letter = dlq.enqueue("op", {"n": 1}, "boom", tenant="acme")
    assert await dlq.retry_due() == 0  # not due yet
    clock.advance(10)
    assert await dlq.retry_due() == 1
    first = dlq.get(letter.id)
    assert (first.retry_count, first.state, first.next_retry_at) == (1, RETRYING, clock.now + 20)
    assert "still down" in first.last_error
    clock.advance(20)
    await dlq.retry_due()
    assert dlq.get(letter.id).next_retry_at == clock.now + 40
    clock.advance(40)
    await dlq.retry_due()
    parked = dlq.get(letter.id)
    assert (parked.retry_count, parked.state, parked.next_retry_at) == (3, PARKED, None)
    clock.advance(10_000)
    assert await dlq.retry_due() == 0  # parked letters wait for an operator
    assert [tenant for _, tenant in handler.calls] == ["acme"] * 3
    assert handler.propagated == ["acme"] * 3


async def test_automatic_retry_succeeds_when_the_target_is_back(db, clock):
    dlq = DeadLetterQueue(db, max_retries=3, backoff=Backoff(1, 3600, jitter=0), clock=clock)
    dlq.register("op", Flaky(failures=1))
    letter = dlq.enqueue("op", {}, "boom", tenant="acme")
    clock.advance(1)
    await dlq.retry_due()
    clock.advance(2)
    await dlq.retry_due()
    assert dlq.get(letter.id).state == REPLAYED


async def test_manual_replay_of_a_parked_letter(db, clock):
    dlq = DeadLetterQueue(db, max_retries=0, backoff=Backoff(1, 3600, jitter=0), clock=clock)
    handler = Flaky(failures=1)
    dlq.register("op", handler)
    letter = dlq.enqueue("op", {"text": "hello"}, "boom", tenant="acme")
    assert letter.state == PARKED
    failed, ok = await dlq.replay(letter.id, tenant="acme")
    assert not ok and failed.state == PARKED and failed.retry_count == 0
    replayed, ok = await dlq.replay(letter.id, tenant="acme")
    assert ok and replayed.state == REPLAYED
    assert handler.calls[-1] == ({"text": "hello"}, "acme")
    with pytest.raises(FailedPrecondition):
        await dlq.replay(letter.id, tenant="acme")
    with pytest.raises(NotFound):
        await dlq.replay(letter.id, tenant="someone-else")


async def test_letters_survive_a_restart_and_still_replay(open_db, clock):
    first = open_db()
    letter = DeadLetterQueue(first, clock=clock).enqueue("op", {"k": [1, 2]}, "boom", tenant="t")
    first.close()
    second = open_db()
    dlq = DeadLetterQueue(second, clock=clock)
    handler = Flaky(failures=0)
    dlq.register("op", handler)
    assert dlq.get(letter.id).payload == {"k": [1, 2]}
    _, ok = await dlq.replay(letter.id)
    assert ok and handler.calls == [({"k": [1, 2]}, "t")] and handler.propagated == ["t"]
    second.close()


async def test_unknown_operation_fails_the_replay_without_losing_the_letter(db, clock):
    dlq = DeadLetterQueue(db, max_retries=0, clock=clock)
    letter = dlq.enqueue("gone", {}, "boom", tenant="acme")
    updated, ok = await dlq.replay(letter.id)
    assert not ok and "no handler" in updated.last_error


async def test_an_operators_replay_runs_under_the_letters_tenant_not_the_operators(db, clock):
    dlq = DeadLetterQueue(db, max_retries=0, clock=clock)
    handler = Flaky(failures=0)
    dlq.register("op", handler)
    letter = dlq.enqueue("op", {}, "boom", tenant="acme")
    token = request_context.bind(request_context.RequestContext("admin-call", "operators", role=request_context.ADMIN))
    try:
        _, ok = await dlq.replay(letter.id)
        assert request_context.current_tenant() == "operators"  # the operator's own context is restored
    finally:
        request_context.unbind(token)
    assert ok and handler.calls == [({}, "acme")] and handler.propagated == ["acme"]


class Blocking:
    """A handler that holds every call until released, counting the calls (an attempt still running)."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, payload, tenant):
        self.calls += 1
        self.entered.set()
        await self.release.wait()
        return {"ok": True}


def _orchestrators(open_db, clock, handler, **options) -> list[DeadLetterQueue]:
    """Two orchestrators' queues on one database (two connections to it), each with the handler registered."""
    queues = [DeadLetterQueue(open_db(), clock=clock, owner=f"orchestrator-{n}", **options) for n in (1, 2)]
    for dlq in queues:
        dlq.register("op", handler)
    return queues


async def test_two_orchestrators_replaying_one_letter_run_its_handler_once(open_db, clock):
    handler = Blocking()
    first, second = _orchestrators(open_db, clock, handler, max_retries=0)
    letter = first.enqueue("op", {}, "boom", tenant="acme")
    running = asyncio.create_task(first.replay(letter.id))
    await asyncio.wait_for(handler.entered.wait(), 10)
    with pytest.raises(FailedPrecondition) as busy:
        await second.replay(letter.id)
    assert busy.value.reason == "RETRY_IN_FLIGHT"
    handler.release.set()
    replayed, ok = await running
    assert ok and replayed.state == REPLAYED
    with pytest.raises(FailedPrecondition) as again:
        await second.replay(letter.id)
    assert again.value.reason == "ALREADY_REPLAYED"
    assert handler.calls == 1


async def test_replays_started_together_on_two_orchestrators_run_the_handler_once(open_db, clock):
    handler = Blocking()
    handler.release.set()
    first, second = _orchestrators(open_db, clock, handler, max_retries=0)
    letter = first.enqueue("op", {}, "boom", tenant="acme")
    outcomes = await asyncio.gather(first.replay(letter.id), second.replay(letter.id), return_exceptions=True)
    assert handler.calls == 1
    assert sorted(type(o).__name__ for o in outcomes) == ["FailedPrecondition", "tuple"]


async def test_two_orchestrators_retry_loops_take_a_due_letter_once(open_db, clock):
    handler = Blocking()
    first, second = _orchestrators(open_db, clock, handler, max_retries=3, backoff=Backoff(10, 3600, jitter=0))
    letter = first.enqueue("op", {}, "boom", tenant="acme")
    clock.advance(10)
    retrying = asyncio.create_task(first.retry_due())
    await asyncio.wait_for(handler.entered.wait(), 10)
    assert await second.retry_due() == 0  # due, but the first orchestrator holds it
    with pytest.raises(FailedPrecondition):
        await second.replay(letter.id)  # nor can an operator's replay run it meanwhile
    handler.release.set()
    assert await retrying == 1
    assert second.get(letter.id).state == REPLAYED and handler.calls == 1
    assert await second.retry_due() == 0


async def test_a_dead_orchestrators_claim_runs_out(open_db, clock):
    handler = Blocking()
    handler.release.set()
    first, second = _orchestrators(open_db, clock, handler, max_retries=0, claim_s=60)
    letter = first.enqueue("op", {}, "boom", tenant="acme")
    assert first._claim(letter.id, manual=True)  # the orchestrator dies holding it
    with pytest.raises(FailedPrecondition):
        await second.replay(letter.id)
    clock.advance(61)
    _, ok = await second.replay(letter.id)
    assert ok and handler.calls == 1


async def test_a_handler_slower_than_the_claim_keeps_it_renewed_and_runs_once(open_db, clock):
    handler = Blocking()
    first, second = _orchestrators(open_db, clock, handler, max_retries=0, claim_s=0.3)
    letter = first.enqueue("op", {}, "boom", tenant="acme")
    running = asyncio.create_task(first.replay(letter.id))
    await asyncio.wait_for(handler.entered.wait(), 10)
    clock.advance(10)  # far past the claim it took
    claim_until = lambda: first._db.one("SELECT claim_until FROM dead_letters WHERE id = ?",  # noqa: E731
                                        (letter.id,))["claim_until"]
    deadline = time.monotonic() + 30
    while claim_until() <= clock():  # until the renewal (every claim_s / 3) runs, from the clock as it is now
        assert time.monotonic() < deadline, "the claim was not renewed"
        await asyncio.sleep(0.02)
    with pytest.raises(FailedPrecondition) as busy:
        await asyncio.wait_for(second.replay(letter.id), 5)
    assert busy.value.reason == "RETRY_IN_FLIGHT"
    handler.release.set()
    replayed, ok = await running
    assert ok and replayed.state == REPLAYED and handler.calls == 1
