from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import grpc
import pytest

from services.orchestrator.circuit_breaker import CircuitBreakers, CircuitOpenError, CircuitState
from services.orchestrator.downstream import counts_against_circuit, guarded
from services.runtime.errors import InvalidArgument, Unavailable

pytestmark = pytest.mark.store_backends  # every test that uses the database runs on both backends


def test_opens_after_threshold_consecutive_failures(db, clock):
    breakers = CircuitBreakers(db, threshold=3, cooldown_s=60, clock=clock)
    breakers.record_failure("p")
    breakers.record_failure("p")
    assert breakers.get("p").state is CircuitState.CLOSED
    assert breakers.allow("p")
    breakers.record_failure("p")
    circuit = breakers.get("p")
    assert circuit.state is CircuitState.OPEN
    assert circuit.failures == 3 and circuit.total_failures == 3
    assert circuit.opened_at == clock.now
    assert not breakers.allow("p")


def test_success_resets_the_consecutive_count(db, clock):
    breakers = CircuitBreakers(db, threshold=3, clock=clock)
    breakers.record_failure("p")
    breakers.record_failure("p")
    breakers.record_success("p")
    breakers.record_failure("p")
    breakers.record_failure("p")
    assert breakers.get("p").state is CircuitState.CLOSED
    assert breakers.get("p").total_failures == 4


def test_half_open_lets_exactly_one_probe_through_after_cooldown(db, clock):
    breakers = CircuitBreakers(db, threshold=1, cooldown_s=60, clock=clock)
    breakers.record_failure("p")
    clock.advance(59)
    assert not breakers.allow("p")
    clock.advance(1)
    assert breakers.allow("p")  # the probe
    assert breakers.get("p").state is CircuitState.HALF_OPEN
    assert not breakers.allow("p")  # a second caller while the probe is out
    breakers.record_success("p")
    assert breakers.get("p").state is CircuitState.CLOSED
    assert breakers.allow("p")


def test_failed_probe_reopens_for_another_cooldown(db, clock):
    breakers = CircuitBreakers(db, threshold=1, cooldown_s=10, clock=clock)
    breakers.record_failure("p")
    clock.advance(10)
    assert breakers.allow("p")
    breakers.record_failure("p")
    assert breakers.get("p").state is CircuitState.OPEN
    assert breakers.get("p").opened_at == clock.now
    clock.advance(9)
    assert not breakers.allow("p")


def test_lost_probe_frees_the_slot_after_a_cooldown(db, clock):
    breakers = CircuitBreakers(db, threshold=1, cooldown_s=10, clock=clock)
    breakers.record_failure("p")
    clock.advance(10)
    assert breakers.allow("p")
    clock.advance(10)
    assert breakers.allow("p")


def test_state_survives_a_restart(open_db, clock):
    first = open_db()
    earlier = CircuitBreakers(first, threshold=2, cooldown_s=60, clock=clock)
    earlier.record_failure("service:nlp")
    earlier.close()  # a shutdown: what is pending is written
    breakers = CircuitBreakers(first, threshold=2, cooldown_s=60, clock=clock)
    breakers.record_failure("service:nlp")
    breakers.close()
    first.close()
    second = open_db()
    reloaded = CircuitBreakers(second, threshold=2, cooldown_s=60, clock=clock)
    assert reloaded.get("service:nlp").state is CircuitState.OPEN
    assert not reloaded.allow("service:nlp")
    second.close()


async def test_call_counts_only_health_failures(db, clock):
    breakers = CircuitBreakers(db, threshold=1, cooldown_s=60, clock=clock)

    async def bad_request():
        raise InvalidArgument("nope")

    with pytest.raises(InvalidArgument):
        await breakers.call("s", bad_request, counts_against_circuit)
    assert breakers.get("s").state is CircuitState.CLOSED

    async def down():
        raise Unavailable("down")

    with pytest.raises(Unavailable):
        await breakers.call("s", down, counts_against_circuit)
    with pytest.raises(CircuitOpenError) as refused:
        await breakers.call("s", down, counts_against_circuit)
    assert refused.value.code is grpc.StatusCode.UNAVAILABLE
    assert refused.value.reason == "CIRCUIT_OPEN"


async def test_cancelled_probe_releases_the_slot(db, clock):
    breakers = CircuitBreakers(db, threshold=1, cooldown_s=5, clock=clock)
    breakers.record_failure("s")
    clock.advance(5)

    async def slow():
        await asyncio.sleep(10)

    task = asyncio.create_task(breakers.call("s", slow, counts_against_circuit))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert breakers.allow("s")


class _StreamingPeer:
    """A typed client's shape: unary calls are coroutines, a server stream is returned unawaited (``stream_answer``)."""

    def __init__(self) -> None:
        self.error: Exception | None = None

    async def query(self, question: str) -> str:
        return f"answer to {question}"

    def stream_answer(self, question: str) -> AsyncIterator[str]:
        return self._events(question)

    async def _events(self, question: str) -> AsyncIterator[str]:
        yield question
        if self.error is not None:
            raise self.error
        yield "done"


async def test_a_guarded_peers_stream_runs_through_its_circuit(db, clock):
    breakers = CircuitBreakers(db, threshold=1, cooldown_s=60, clock=clock)
    peer = _StreamingPeer()
    rag = guarded(peer, "rag", breakers)
    assert [event async for event in rag.stream_answer("q")] == ["q", "done"]
    assert await rag.query("q") == "answer to q"
    assert breakers.get("service:rag").successes == 2
    peer.error = Unavailable("down")
    received = []
    with pytest.raises(Unavailable):
        async for event in rag.stream_answer("q"):
            received.append(event)
    assert received == ["q"] and breakers.get("service:rag").state is CircuitState.OPEN
    with pytest.raises(CircuitOpenError):
        await rag.stream_answer("q").__anext__()


class _HeldDatabase:
    """The orchestrator's database, each write held until ``release`` (a slow PostgreSQL, a locked SQLite file)."""

    def __init__(self, db) -> None:
        self._db = db
        self.embedded = db.embedded
        self.writing, self.release, self.written = threading.Event(), threading.Event(), threading.Event()
        self.writes = 0

    def __getattr__(self, name):
        return getattr(self._db, name)

    def execute(self, sql: str, params=()) -> int:
        self.writing.set()
        self.release.wait(5)
        self.writes += 1
        changed = self._db.execute(sql, params)
        self.written.set()
        return changed


async def test_transitions_on_the_event_loop_never_wait_for_the_database(db, clock):
    held = _HeldDatabase(db)
    breakers = CircuitBreakers(held, threshold=2, cooldown_s=60, clock=clock)

    async def down():
        raise Unavailable("down")

    for _ in range(3):  # each call records a transition on the loop while the first write is held
        with pytest.raises((Unavailable, CircuitOpenError)):
            await breakers.call("service:rag", down, counts_against_circuit)
    assert held.writing.wait(5)  # the writer is inside the database now, and the calls above did not wait for it
    assert not held.written.is_set()
    assert breakers.get("service:rag").state is CircuitState.OPEN  # decided in memory
    held.release.set()
    assert breakers.flush()
    row = db.one("SELECT state, failures FROM circuits WHERE name = ?", ("service:rag",))
    assert (row["state"], row["failures"]) == ("OPEN", 2)
    assert held.writes <= 2  # the first transition, then the latest state of the rest: coalesced
    breakers.close()


async def test_a_failed_write_is_tried_again(db, clock, monkeypatch):
    failing = _HeldDatabase(db)
    failing.release.set()
    calls = []
    original = failing.execute

    def execute(sql, params=()):
        calls.append(sql)
        if len(calls) == 1:
            raise RuntimeError("database away")
        return original(sql, params)

    monkeypatch.setattr(failing, "execute", execute)
    monkeypatch.setattr("services.orchestrator.circuit_breaker._Persister.RETRY_S", 0.05)
    breakers = CircuitBreakers(failing, threshold=1, cooldown_s=60, clock=clock)
    breakers.record_failure("service:nlp")
    assert breakers.flush()
    assert len(calls) == 2
    assert db.one("SELECT state FROM circuits WHERE name = ?", ("service:nlp",))["state"] == "OPEN"
    breakers.close()
