"""Dead-letter queue: failed downstream operations, retried with backoff, then parked for inspection.

A letter is an operation name plus a JSON payload; the operation's handler is registered by
the composition root (``service.py``), so a letter survives a restart and can still run. The
background task retries due letters up to ``max_retries`` times (``backoff``: doubling, capped, with
jitter); after that the letter is parked until someone replays it by RPC. Each
letter runs under the tenant that enqueued it: the handler gets it as a parameter, and the
queue binds it as the request context too, so the handler's calls to peers carry it (a retry
runs outside any RPC, an operator's replay inside the operator's).

Several orchestrators share the queue on PostgreSQL, and each runs the retry loop: an attempt first
claims its letter with one conditional UPDATE (``claimed_by``/``claim_until``, taken only when no live
claim exists, and for a retry only while the letter is still due), so two orchestrators never run one
letter's handler at once, whether they replay it, retry it, or both. The attempt's outcome is written
only under the claim, which the attempt renews while its handler runs. A claim outlives an attempt by
``claim_s`` at most: an orchestrator that dies mid-attempt leaves the letter to the others after that.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from services.orchestrator.database import SqlDatabase
from services.runtime import request_context
from services.runtime.backoff import Backoff
from services.runtime.errors import FailedPrecondition, NotFound
from services.storage.replica import replica_id

log = logging.getLogger("docuthinker.orchestrator.dlq")

RETRYING, PARKED, REPLAYED = "retrying", "parked", "replayed"
STATES = (RETRYING, PARKED, REPLAYED)

Handler = Callable[[Mapping[str, Any], str], Awaitable[Any]]
"""Runs a letter: its payload and its tenant."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS dead_letters (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    operation TEXT NOT NULL,
    payload TEXT NOT NULL,
    last_error TEXT NOT NULL,
    retry_count INTEGER NOT NULL,
    state TEXT NOT NULL,
    created_at REAL NOT NULL,
    next_retry_at REAL,
    claimed_by TEXT,
    claim_until REAL
);
CREATE INDEX IF NOT EXISTS dead_letters_due ON dead_letters (state, next_retry_at);
"""


@dataclass(frozen=True)
class DeadLetter:
    id: str
    tenant: str
    operation: str
    payload: dict[str, Any]
    last_error: str
    retry_count: int
    state: str
    created_at: float
    next_retry_at: float | None


@dataclass(frozen=True)
class DeadLetterCounts:
    parked: int
    retrying: int
    replayed: int


class DeadLetterQueue:
    def __init__(
        self,
        db: SqlDatabase,
        *,
        max_retries: int = 3,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.time,
        claim_s: float = 600.0,
        owner: str | None = None,
    ) -> None:
        self._db = db
        self.max_retries = max_retries
        self.backoff = backoff or Backoff(30.0, 6 * 3600.0)
        self.claim_s = claim_s
        """Longest an attempt holds its letter: a claim older than this is a dead orchestrator's."""
        self.owner = owner or replica_id()
        self._clock = clock
        self._handlers: dict[str, Handler] = {}
        db.script(_SCHEMA)
        if db.embedded and "claimed_by" not in {r["name"] for r in db.query("PRAGMA table_info(dead_letters)")}:
            db.execute("ALTER TABLE dead_letters ADD COLUMN claimed_by TEXT")  # a database from before claims
            db.execute("ALTER TABLE dead_letters ADD COLUMN claim_until REAL")

    def register(self, operation: str, handler: Handler) -> None:
        self._handlers[operation] = handler

    def enqueue(self, operation: str, payload: Mapping[str, Any], error: str, tenant: str) -> DeadLetter:
        now = self._clock()
        retrying = self.max_retries > 0
        letter = DeadLetter(
            id=uuid.uuid4().hex,
            tenant=tenant,
            operation=operation,
            payload=dict(payload),
            last_error=error,
            retry_count=0,
            state=RETRYING if retrying else PARKED,
            created_at=now,
            next_retry_at=now + self.backoff.delay_s(1) if retrying else None,
        )
        self._db.execute(
            "INSERT INTO dead_letters (id, tenant, operation, payload, last_error, retry_count, state, created_at,"
            " next_retry_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                letter.id,
                letter.tenant,
                letter.operation,
                json.dumps(letter.payload, default=str),
                letter.last_error,
                letter.retry_count,
                letter.state,
                letter.created_at,
                letter.next_retry_at,
            ),
        )
        log.warning("dead letter", extra={"fields": {"id": letter.id, "operation": operation, "error": error}})
        return letter

    def get(self, letter_id: str, tenant: str | None = None) -> DeadLetter:
        if tenant is None:  # the operator's view: every tenant
            row = self._db.one("SELECT * FROM dead_letters WHERE id = ?", (letter_id,))
        else:
            row = self._db.one("SELECT * FROM dead_letters WHERE id = ? AND tenant = ?", (letter_id, tenant))
        if row is None:
            raise NotFound(f"dead letter {letter_id!r} not found", reason="DEAD_LETTER_NOT_FOUND")
        return _from_row(row)

    def list(self, limit: int = 20, tenant: str | None = None) -> tuple[list[DeadLetter], DeadLetterCounts]:
        where, params = ("WHERE tenant = ?", [tenant]) if tenant is not None else ("", [])
        rows = self._db.query(
            f"SELECT * FROM dead_letters {where} ORDER BY created_at DESC LIMIT ?",
            [*params, limit],
        )
        counts = dict.fromkeys(STATES, 0)
        for row in self._db.query(
            f"SELECT state, COUNT(*) AS n FROM dead_letters {where} GROUP BY state", params
        ):
            counts[row["state"]] = int(row["n"])
        return [_from_row(r) for r in rows], DeadLetterCounts(counts[PARKED], counts[RETRYING], counts[REPLAYED])

    async def replay(self, letter_id: str, tenant: str | None = None) -> tuple[DeadLetter, bool]:
        """Runs a letter now, whatever its retry schedule; returns it updated and whether it succeeded."""
        letter = self.get(letter_id, tenant)
        if letter.state != REPLAYED and self._claim(letter.id, manual=True):
            return await self._attempt(self.get(letter_id), manual=True)
        if self.get(letter_id, tenant).state == REPLAYED:
            raise FailedPrecondition(f"dead letter {letter_id} was already replayed", reason="ALREADY_REPLAYED")
        raise FailedPrecondition(f"dead letter {letter_id} is being retried right now", reason="RETRY_IN_FLIGHT")

    async def retry_due(self) -> int:
        """Retries every letter whose backoff has elapsed; returns how many were attempted."""
        rows = self._db.query(
            "SELECT * FROM dead_letters WHERE state = ? AND next_retry_at <= ? ORDER BY next_retry_at",
            (RETRYING, self._clock()),
        )
        attempted = 0
        for row in rows:
            if not self._claim(row["id"], manual=False):
                continue  # another orchestrator (or a replay) has it
            await self._attempt(self.get(row["id"]), manual=False)  # as it is now, under the claim
            attempted += 1
        return attempted

    async def run(self, poll_s: float) -> None:
        """The background retry loop; runs until cancelled."""
        while True:
            try:
                await self.retry_due()
            except Exception:
                log.exception("dead-letter retry pass failed")
            await asyncio.sleep(poll_s)

    def _claim(self, letter_id: str, *, manual: bool) -> bool:
        """Takes the letter for one attempt unless a live claim exists (a retry: only while it is still due)."""
        now = self._clock()
        due = "state <> ?" if manual else "state = ? AND next_retry_at <= ?"
        params = [REPLAYED] if manual else [RETRYING, now]
        return self._db.execute(
            f"UPDATE dead_letters SET claimed_by = ?, claim_until = ? WHERE id = ? AND {due} "
            "AND (claim_until IS NULL OR claim_until < ?)",
            (self.owner, now + self.claim_s, letter_id, *params, now),
        ) == 1

    async def _attempt(self, letter: DeadLetter, *, manual: bool) -> tuple[DeadLetter, bool]:
        """Runs a claimed letter's handler; its outcome ends the claim."""
        token = request_context.bind(
            request_context.RequestContext(request_id=f"dlq-{letter.id}", tenant=letter.tenant)
        )
        renewal = asyncio.get_running_loop().create_task(self._renew(letter.id))
        try:
            handler = self._handlers.get(letter.operation)
            if handler is None:
                raise FailedPrecondition(f"no handler for operation {letter.operation!r}", reason="NO_HANDLER")
            await handler(letter.payload, letter.tenant)
        except Exception as exc:  # noqa: BLE001 - the failure is the letter's new state
            return self._failed(letter, f"{type(exc).__name__}: {exc}", manual), False
        finally:
            renewal.cancel()
            request_context.unbind(token)
        self._db.execute(
            f"UPDATE dead_letters SET state = ?, next_retry_at = NULL, {_UNCLAIM}", (REPLAYED, letter.id, self.owner)
        )
        log.info("dead letter replayed", extra={"fields": {"id": letter.id, "manual": manual}})
        return self.get(letter.id), True

    async def _renew(self, letter_id: str) -> None:
        """Extends the claim every third of ``claim_s`` while the handler runs, so a handler slower than the
        claim is never run a second time by another orchestrator meanwhile; a dead one's claim still runs out."""
        while True:
            await asyncio.sleep(self.claim_s / 3)
            try:
                self._db.execute("UPDATE dead_letters SET claim_until = ? WHERE id = ? AND claimed_by = ?",
                                 (self._clock() + self.claim_s, letter_id, self.owner))
            except Exception:
                log.warning("dead-letter claim renewal failed", exc_info=True, extra={"fields": {"id": letter_id}})

    def _failed(self, letter: DeadLetter, error: str, manual: bool) -> DeadLetter:
        if manual:
            # An operator's replay does not use up the automatic retries.
            self._db.execute(f"UPDATE dead_letters SET last_error = ?, {_UNCLAIM}", (error, letter.id, self.owner))
            return self.get(letter.id)
        retries = letter.retry_count + 1
        if retries >= self.max_retries:
            state, next_at = PARKED, None
        else:
            state, next_at = RETRYING, self._clock() + self.backoff.delay_s(retries + 1)
        self._db.execute(
            f"UPDATE dead_letters SET last_error = ?, retry_count = ?, state = ?, next_retry_at = ?, {_UNCLAIM}",
            (error, retries, state, next_at, letter.id, self.owner),
        )
        return self.get(letter.id)


_UNCLAIM = "claimed_by = NULL, claim_until = NULL WHERE id = ? AND claimed_by = ?"
"""Ends this orchestrator's claim (parameters: the letter, this owner): an outcome is written only under it."""


def _from_row(row) -> DeadLetter:
    return DeadLetter(
        id=row["id"],
        tenant=row["tenant"],
        operation=row["operation"],
        payload=json.loads(row["payload"]),
        last_error=row["last_error"],
        retry_count=row["retry_count"],
        state=row["state"],
        created_at=row["created_at"],
        next_retry_at=row["next_retry_at"],
    )
