"""Circuit breakers, one per LLM provider and per downstream service, persisted in the orchestrator's database.

CLOSED -> OPEN after ``threshold`` consecutive failures; OPEN -> HALF_OPEN once the
cooldown has passed, letting exactly one probe through; the probe's success closes the
circuit, its failure re-opens it for another cooldown. Only failures that say something
about the target's health count (unavailable, timeout, overloaded); a target that answers
"bad request" is healthy, so callers record that as a success.

The state lives in memory and is decided there; persisting it (so a restart keeps open circuits
open) is a background writer's job (``_Persister``, a thread of its own): every call records a
transition on the event loop, and a database round trip there (PostgreSQL: a network one) would
stall every other request for it. The writer stores the latest state of each circuit, so a burst
of transitions costs one write per circuit; ``flush`` waits for it (shutdown, tests).
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from services.orchestrator.database import SqlDatabase
from services.runtime.errors import Unavailable

T = TypeVar("T")

log = logging.getLogger("docuthinker.orchestrator.circuits")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS circuits (
    name TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    failures INTEGER NOT NULL,
    successes INTEGER NOT NULL,
    total_failures INTEGER NOT NULL,
    opened_at REAL,
    probe_started_at REAL
);
"""


class CircuitState(enum.StrEnum):
    CLOSED = "CLOSED"
    OPEN = "OPEN"
    HALF_OPEN = "HALF_OPEN"


@dataclass(frozen=True)
class Circuit:
    name: str
    state: CircuitState = CircuitState.CLOSED
    failures: int = 0
    """Consecutive failures since the last success."""
    successes: int = 0
    total_failures: int = 0
    opened_at: float | None = None
    """Wall-clock time (epoch seconds) the circuit last opened."""
    probe_started_at: float | None = None
    """When the half-open probe in flight started; None when no probe is out."""


class CircuitOpenError(Unavailable):
    """The target's circuit is open: the call was not attempted."""

    def __init__(self, name: str, retry_in_s: float) -> None:
        super().__init__(
            f"circuit for {name} is open; next probe in {retry_in_s:.1f}s",
            reason="CIRCUIT_OPEN",
            metadata={"circuit": name, "retry_in_s": f"{retry_in_s:.1f}"},
        )
        self.circuit = name


class _Persister:
    """Writes circuits in a thread of its own, the latest state of each once; a write that fails is tried again
    (unless a newer state replaced it) a second later, ``ATTEMPTS`` times in all: past that the state stays in
    memory only, until the circuit's next transition."""

    RETRY_S = 1.0
    ATTEMPTS = 3

    def __init__(self, write: Callable[[Circuit], None]) -> None:
        self._write = write
        self._pending: dict[str, Circuit] = {}
        self._writing = False
        self._closed = False
        self._failures: dict[str, int] = {}
        self._ready = threading.Condition()
        self._thread: threading.Thread | None = None

    def put(self, circuit: Circuit) -> None:
        with self._ready:
            self._pending[circuit.name] = circuit
            self._failures.pop(circuit.name, None)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="circuit-persister", daemon=True)
                self._thread.start()
            self._ready.notify_all()

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Waits until every state put so far is written; False on timeout."""
        with self._ready:
            return self._ready.wait_for(lambda: not self._pending and not self._writing, timeout_s)

    def close(self, timeout_s: float = 10.0) -> None:
        self.flush(timeout_s)
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            with self._ready:
                self._ready.wait_for(lambda: self._pending or self._closed)
                if self._closed and not self._pending:
                    return
                batch, self._pending, self._writing = list(self._pending.values()), {}, True
            failed: list[Circuit] = []
            for circuit in batch:
                try:
                    self._write(circuit)
                except Exception as error:  # noqa: BLE001 - the state is still right in memory
                    log.warning("persisting circuit state failed", extra={"fields": {
                        "circuit": circuit.name, "error": str(error) or type(error).__name__}})
                    failed.append(circuit)
            with self._ready:
                for circuit in failed:
                    attempts = self._failures.get(circuit.name, 0) + 1
                    if attempts < self.ATTEMPTS and circuit.name not in self._pending:
                        self._pending[circuit.name], self._failures[circuit.name] = circuit, attempts
                self._writing = False
                self._ready.notify_all()
                if failed and not self._closed:
                    self._ready.wait(self.RETRY_S)


class CircuitBreakers:
    def __init__(
        self,
        db: SqlDatabase,
        *,
        threshold: int = 3,
        cooldown_s: float = 60.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._db = db
        self.threshold = threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        db.script(_SCHEMA)
        self._circuits = {row["name"]: _from_row(row) for row in db.query("SELECT * FROM circuits")}
        self._persister = _Persister(self._write)

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Waits until every transition so far is in the database; False on timeout."""
        return self._persister.flush(timeout_s)

    def close(self) -> None:
        """Writes what is pending and stops the writer (before the database closes)."""
        self._persister.close()

    def declare(self, names: list[str]) -> None:
        """Makes circuits visible in listings before their first call (not persisted until used)."""
        with self._lock:
            for name in names:
                self._circuits.setdefault(name, Circuit(name))

    # -- queries ---------------------------------------------------------------------
    def get(self, name: str) -> Circuit:
        with self._lock:
            return self._circuits.get(name, Circuit(name))

    def all(self) -> list[Circuit]:
        with self._lock:
            return sorted(self._circuits.values(), key=lambda c: c.name)

    def is_open(self, name: str) -> bool:
        """True while calls to ``name`` would be refused (does not take a probe)."""
        with self._lock:
            circuit = self._circuits.get(name, Circuit(name))
            return not self._admissible(circuit, self._clock())

    # -- transitions -----------------------------------------------------------------
    def allow(self, name: str) -> bool:
        """Whether a call to ``name`` may go ahead now; in HALF_OPEN this takes the single probe."""
        with self._lock:
            now = self._clock()
            circuit = self._circuits.get(name, Circuit(name))
            if not self._admissible(circuit, now):
                return False
            if circuit.state is not CircuitState.CLOSED:
                self._save(replace(circuit, state=CircuitState.HALF_OPEN, probe_started_at=now))
            return True

    def record_success(self, name: str) -> None:
        with self._lock:
            circuit = self._circuits.get(name, Circuit(name))
            self._save(
                replace(
                    circuit,
                    state=CircuitState.CLOSED,
                    failures=0,
                    successes=circuit.successes + 1,
                    probe_started_at=None,
                )
            )

    def record_failure(self, name: str) -> None:
        with self._lock:
            now = self._clock()
            circuit = self._circuits.get(name, Circuit(name))
            failures = circuit.failures + 1
            trips = circuit.state is CircuitState.HALF_OPEN or failures >= self.threshold
            if trips:
                updated = replace(
                    circuit,
                    state=CircuitState.OPEN,
                    failures=failures,
                    total_failures=circuit.total_failures + 1,
                    opened_at=now,
                    probe_started_at=None,
                )
            else:
                updated = replace(circuit, failures=failures, total_failures=circuit.total_failures + 1)
            self._save(updated)

    def retry_in(self, name: str) -> float:
        circuit = self.get(name)
        if circuit.opened_at is None:
            return 0.0
        return max(0.0, circuit.opened_at + self.cooldown_s - self._clock())

    async def call(
        self, name: str, fn: Callable[[], Awaitable[T]], is_failure: Callable[[BaseException], bool]
    ) -> T:
        """Runs ``fn`` through the circuit of ``name``; raises CircuitOpenError when it is open."""
        if not self.allow(name):
            raise CircuitOpenError(name, self.retry_in(name))
        try:
            result = await fn()
        except Exception as exc:
            if is_failure(exc):
                self.record_failure(name)
            else:
                # The target answered (e.g. "bad request"): it is healthy.
                self.record_success(name)
            raise
        except BaseException:
            # Cancelled: says nothing about the target; free the probe slot if this was it.
            self._release_probe(name)
            raise
        self.record_success(name)
        return result

    async def stream(
        self, name: str, fn: Callable[[], AsyncIterator[T]], is_failure: Callable[[BaseException], bool]
    ) -> AsyncIterator[T]:
        """``call`` for a stream: admitted before its first message, judged by how it ends."""
        if not self.allow(name):
            raise CircuitOpenError(name, self.retry_in(name))
        try:
            async for item in fn():
                yield item
        except Exception as exc:
            if is_failure(exc):
                self.record_failure(name)
            else:
                self.record_success(name)
            raise
        except BaseException:
            # Cancelled, or the consumer closed the stream early: says nothing about the target.
            self._release_probe(name)
            raise
        self.record_success(name)

    # -- internals -------------------------------------------------------------------
    def _admissible(self, circuit: Circuit, now: float) -> bool:
        if circuit.state is CircuitState.CLOSED:
            return True
        if circuit.state is CircuitState.HALF_OPEN and circuit.probe_started_at is not None:
            # A probe is out; a lost one (crash, cancellation) frees the slot after a cooldown.
            return now - circuit.probe_started_at >= max(self.cooldown_s, 1.0)
        opened = circuit.opened_at or 0.0
        return now - opened >= self.cooldown_s

    def _release_probe(self, name: str) -> None:
        with self._lock:
            circuit = self._circuits.get(name)
            if circuit is not None and circuit.state is CircuitState.HALF_OPEN:
                self._save(replace(circuit, state=CircuitState.OPEN, probe_started_at=None,
                                   opened_at=self._clock() - self.cooldown_s))

    def _save(self, circuit: Circuit) -> None:
        self._circuits[circuit.name] = circuit
        self._persister.put(circuit)

    def _write(self, circuit: Circuit) -> None:
        """In the writer's thread."""
        self._db.execute(
            "INSERT INTO circuits (name, state, failures, successes, total_failures, opened_at, probe_started_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET state=excluded.state,"
            " failures=excluded.failures, successes=excluded.successes, total_failures=excluded.total_failures,"
            " opened_at=excluded.opened_at, probe_started_at=excluded.probe_started_at",
            (
                circuit.name,
                circuit.state.value,
                circuit.failures,
                circuit.successes,
                circuit.total_failures,
                circuit.opened_at,
                circuit.probe_started_at,
            ),
        )


def _from_row(row) -> Circuit:
    return Circuit(
        name=row["name"],
        state=CircuitState(row["state"]),
        failures=row["failures"],
        successes=row["successes"],
        total_failures=row["total_failures"],
        opened_at=row["opened_at"],
        probe_started_at=row["probe_started_at"],
    )
