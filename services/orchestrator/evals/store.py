"""Evaluation sets, runs and their per-item results, in the orchestrator's database (SQLite or PostgreSQL).

Every statement names the tenant: another tenant's set or run is NOT_FOUND, never a permission error that
would say it exists. A run holds one of its tenant's ``max_concurrent`` run slots while it is active: the slot
is a column under a partial unique index, taken by a plain ``INSERT ... ON CONFLICT DO NOTHING``, so two
orchestrators sharing a database can never start more runs for a tenant than the quota, whichever wins.

A running run is owned by one orchestrator (``owner``) under a lease it renews while it works; every write
of a result or an outcome is conditional on that ownership, so an orchestrator that lost its run (its lease
ran out, or the run was cancelled elsewhere) cannot write into it. ``sweep`` marks a run whose lease ran out
``interrupted`` and frees its slot: its finished items are kept.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from services.orchestrator.database import SqlDatabase
from services.orchestrator.evals import totals as scoring
from services.orchestrator.evals.records import (
    INTERRUPTED,
    RUNNING,
    SUCCEEDED,
    EvalRun,
    EvalSet,
    ItemResult,
    RunSettings,
)
from services.orchestrator.evals.sets import EvalItem, ParsedSet
from services.runtime.errors import FailedPrecondition, NotFound, ResourceExhausted

_SCHEMA = """
CREATE TABLE IF NOT EXISTS eval_sets (
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    format TEXT NOT NULL,
    item_count INTEGER NOT NULL,
    kinds TEXT NOT NULL,
    items TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX IF NOT EXISTS eval_sets_by_time ON eval_sets (tenant, created_at);
CREATE TABLE IF NOT EXISTS eval_runs (
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    set_id TEXT NOT NULL,
    set_name TEXT NOT NULL,
    label TEXT NOT NULL,
    settings TEXT NOT NULL,
    identities TEXT NOT NULL,
    state TEXT NOT NULL,
    total INTEGER NOT NULL,
    completed INTEGER NOT NULL,
    slot INTEGER,
    owner TEXT,
    lease_until REAL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    error TEXT NOT NULL DEFAULT '',
    totals TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    finished_at REAL,
    PRIMARY KEY (tenant, id)
);
CREATE UNIQUE INDEX IF NOT EXISTS eval_runs_slots ON eval_runs (tenant, slot) WHERE slot IS NOT NULL;
CREATE INDEX IF NOT EXISTS eval_runs_by_set ON eval_runs (tenant, set_id, created_at);
CREATE INDEX IF NOT EXISTS eval_runs_finished ON eval_runs (finished_at);
CREATE TABLE IF NOT EXISTS eval_results (
    tenant TEXT NOT NULL,
    run_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (tenant, run_id, position)
);
"""


class EvalStore:
    def __init__(self, db: SqlDatabase, *, max_sets: int = 100, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self.max_sets = max_sets
        self._clock = clock
        db.script(_SCHEMA)

    # -- sets ---------------------------------------------------------------------------------
    def create_set(self, tenant: str, name: str, parsed: ParsedSet) -> EvalSet:
        held = self._db.one("SELECT COUNT(*) AS n FROM eval_sets WHERE tenant = ?", (tenant,))
        if held is not None and int(held["n"]) >= self.max_sets:
            raise ResourceExhausted(f"this tenant holds {self.max_sets} evaluation sets, the most it may; delete one",
                                    reason="EVAL_SET_QUOTA", metadata={"limit": str(self.max_sets)})
        created = EvalSet(uuid.uuid4().hex, name, parsed.format, len(parsed.items), self._clock(), parsed.items,
                          _kinds(parsed.items))
        self._db.execute(
            "INSERT INTO eval_sets (tenant, id, name, format, item_count, kinds, items, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (tenant, created.id, created.name, created.format, created.item_count, json.dumps(dict(created.kinds)),
             json.dumps([i.as_json() for i in created.items]), created.created_at),
        )
        return created

    def get_set(self, tenant: str, set_id: str) -> EvalSet:
        row = self._db.one("SELECT * FROM eval_sets WHERE tenant = ? AND id = ?", (tenant, set_id))
        if row is None:
            raise NotFound(f"evaluation set {set_id!r} not found", reason="EVAL_SET_NOT_FOUND",
                           metadata={"set_id": set_id})
        items = tuple(EvalItem.from_json(raw) for raw in json.loads(row["items"]))
        return EvalSet(row["id"], row["name"], row["format"], int(row["item_count"]), float(row["created_at"]), items,
                       _kinds(items))

    def list_sets(self, tenant: str, limit: int, offset: int = 0) -> tuple[list[EvalSet], int]:
        """The tenant's sets, newest first (without their items), and how many it has."""
        rows = self._db.query(
            "SELECT id, name, format, item_count, kinds, created_at FROM eval_sets WHERE tenant = ?"
            " ORDER BY created_at DESC, id LIMIT ? OFFSET ?", (tenant, limit, offset))
        total = self._db.one("SELECT COUNT(*) AS n FROM eval_sets WHERE tenant = ?", (tenant,))
        return ([EvalSet(r["id"], r["name"], r["format"], int(r["item_count"]), float(r["created_at"]),
                         kinds=json.loads(r["kinds"])) for r in rows],
                int(total["n"]) if total else 0)

    def delete_set(self, tenant: str, set_id: str) -> int:
        """Deletes a set with its runs and their results; returns how many runs went. An active run refuses it."""
        self.get_set(tenant, set_id)
        self.sweep()
        if self._db.one("SELECT id FROM eval_runs WHERE tenant = ? AND set_id = ? AND state = ?",
                        (tenant, set_id, RUNNING)) is not None:
            raise FailedPrecondition("a run of this set is in progress: cancel it first", reason="EVAL_RUN_ACTIVE",
                                     metadata={"set_id": set_id})
        runs = [r["id"] for r in self._db.query("SELECT id FROM eval_runs WHERE tenant = ? AND set_id = ?",
                                                 (tenant, set_id))]
        with self._db.transaction() as conn:
            for run_id in runs:
                conn.execute("DELETE FROM eval_results WHERE tenant = ? AND run_id = ?", (tenant, run_id))
            conn.execute("DELETE FROM eval_runs WHERE tenant = ? AND set_id = ?", (tenant, set_id))
            conn.execute("DELETE FROM eval_sets WHERE tenant = ? AND id = ?", (tenant, set_id))
        return len(runs)

    # -- runs ---------------------------------------------------------------------------------
    def create_run(self, tenant: str, evalset: EvalSet, settings: RunSettings, label: str, identities: Mapping[str, Any],
                   *, owner: str, lease_s: float, max_concurrent: int) -> EvalRun:
        """A new running run owned by ``owner``, in a free run slot of the tenant, or RESOURCE_EXHAUSTED."""
        self.sweep()
        now = self._clock()
        run = EvalRun(uuid.uuid4().hex, evalset.id, evalset.name, label, RUNNING, evalset.item_count, 0, settings,
                      dict(identities), now)
        for slot in range(max_concurrent):
            inserted = self._db.execute(
                "INSERT INTO eval_runs (tenant, id, set_id, set_name, label, settings, identities, state, total,"
                " completed, slot, owner, lease_until, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                (tenant, run.id, run.set_id, run.set_name, label, json.dumps(settings.as_json()),
                 json.dumps(run.identities), RUNNING, run.total, slot, owner, now + lease_s, now),
            )
            if inserted == 1:
                return run
        raise ResourceExhausted(
            f"{max_concurrent} evaluation runs of this tenant are in progress, the most at once: wait for one to"
            " end, or cancel one", reason="EVAL_RUN_QUOTA", metadata={"limit": str(max_concurrent)})

    def get_run(self, tenant: str, run_id: str) -> EvalRun:
        row = self._db.one("SELECT * FROM eval_runs WHERE tenant = ? AND id = ?", (tenant, run_id))
        if row is None:
            raise NotFound(f"evaluation run {run_id!r} not found", reason="EVAL_RUN_NOT_FOUND",
                           metadata={"run_id": run_id})
        return _run(row)

    def list_runs(self, tenant: str, set_id: str, limit: int, offset: int = 0) -> tuple[list[EvalRun], int]:
        """The tenant's runs (of one set, or of all when ``set_id`` is empty), newest first, and how many."""
        where, params = ("tenant = ? AND set_id = ?", [tenant, set_id]) if set_id else ("tenant = ?", [tenant])
        rows = self._db.query(f"SELECT * FROM eval_runs WHERE {where} ORDER BY created_at DESC, id"
                              " LIMIT ? OFFSET ?", [*params, limit, offset])
        total = self._db.one(f"SELECT COUNT(*) AS n FROM eval_runs WHERE {where}", params)
        return [_run(r) for r in rows], int(total["n"]) if total else 0

    def delete_run(self, tenant: str, run_id: str) -> None:
        run = self.get_run(tenant, run_id)
        if run.active:
            raise FailedPrecondition("the run is in progress: cancel it first", reason="EVAL_RUN_ACTIVE",
                                     metadata={"run_id": run_id})
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM eval_results WHERE tenant = ? AND run_id = ?", (tenant, run_id))
            conn.execute("DELETE FROM eval_runs WHERE tenant = ? AND id = ?", (tenant, run_id))

    def request_cancel(self, tenant: str, run_id: str) -> EvalRun:
        """Flags an active run for cancellation (its owner stops it); an ended run is returned as it is."""
        self.get_run(tenant, run_id)
        self._db.execute("UPDATE eval_runs SET cancel_requested = 1 WHERE tenant = ? AND id = ? AND state = ?",
                         (tenant, run_id, RUNNING))
        return self.get_run(tenant, run_id)

    def results(self, tenant: str, run_id: str, limit: int | None = None, offset: int = 0) -> list[ItemResult]:
        """A run's results in the set's order."""
        sql = "SELECT result FROM eval_results WHERE tenant = ? AND run_id = ? ORDER BY position"
        params: list[Any] = [tenant, run_id]
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        return [ItemResult.from_json(json.loads(r["result"])) for r in self._db.query(sql, params)]

    def totals(self, tenant: str, run: EvalRun) -> dict[str, Any]:
        """The run's totals: stored once it ended, computed from the results so far while it runs."""
        if run.totals is not None:
            return dict(run.totals)
        return summarise(self.results(tenant, run.id))

    # -- the owner's writes ---------------------------------------------------------------------
    def record(self, tenant: str, run_id: str, owner: str, result: ItemResult) -> bool:
        """Stores one result of a run this owner still holds (False: it lost the run; nothing is written)."""
        with self._db.transaction() as conn:
            held = conn.execute(
                "UPDATE eval_runs SET completed = completed + 1 WHERE tenant = ? AND id = ? AND owner = ? AND state = ?",
                (tenant, run_id, owner, RUNNING)).rowcount
            if held != 1:
                return False
            conn.execute("INSERT INTO eval_results (tenant, run_id, position, result) VALUES (?, ?, ?, ?)",
                         (tenant, run_id, result.position, json.dumps(result.as_json())))
        return True

    def renew(self, tenant: str, run_id: str, owner: str, lease_s: float) -> tuple[bool, bool]:
        """Extends the owner's lease; returns (still held, cancellation requested)."""
        held = self._db.execute(
            "UPDATE eval_runs SET lease_until = ? WHERE tenant = ? AND id = ? AND owner = ? AND state = ?",
            (self._clock() + lease_s, tenant, run_id, owner, RUNNING)) == 1
        row = self._db.one("SELECT cancel_requested FROM eval_runs WHERE tenant = ? AND id = ?", (tenant, run_id))
        return held, bool(row and row["cancel_requested"])

    def finish(self, tenant: str, run_id: str, owner: str, state: str, *, error: str = "",
               identities: Mapping[str, Any] | None = None) -> bool:
        """Ends a run this owner holds with ``state``, its totals computed and stored, its slot freed."""
        run = self.get_run(tenant, run_id)
        computed = summarise(self.results(tenant, run_id))
        return self._db.execute(
            "UPDATE eval_runs SET state = ?, error = ?, totals = ?, identities = ?, finished_at = ?, slot = NULL,"
            " owner = NULL, lease_until = NULL WHERE tenant = ? AND id = ? AND owner = ? AND state = ?",
            (state, error, json.dumps(computed), json.dumps(dict(identities or run.identities)), self._clock(),
             tenant, run_id, owner, RUNNING)) == 1

    def sweep(self) -> int:
        """Marks runs whose owner's lease ran out ``interrupted`` (their slots freed); returns how many."""
        now = self._clock()
        stale = self._db.query("SELECT tenant, id FROM eval_runs WHERE state = ? AND lease_until < ?", (RUNNING, now))
        for row in stale:
            computed = summarise(self.results(row["tenant"], row["id"]))
            self._db.execute(
                "UPDATE eval_runs SET state = ?, error = ?, totals = ?, finished_at = ?, slot = NULL, owner = NULL,"
                " lease_until = NULL WHERE tenant = ? AND id = ? AND state = ? AND lease_until < ?",
                (INTERRUPTED, "the orchestrator running it stopped before the end", json.dumps(computed), now,
                 row["tenant"], row["id"], RUNNING, now))
        return len(stale)

    def release_owned(self, owner: str, state: str = INTERRUPTED, error: str = "") -> int:
        """Ends every run ``owner`` still holds (an orderly stop), so none waits for its lease to run out."""
        rows = self._db.query("SELECT tenant, id FROM eval_runs WHERE owner = ? AND state = ?", (owner, RUNNING))
        return sum(self.finish(r["tenant"], r["id"], owner, state, error=error) for r in rows)

    # -- mesh-wide views (metrics) -------------------------------------------------------------
    def last_finished(self) -> EvalRun | None:
        """The run of any tenant that last ran to its end (a cancelled, failed or interrupted one has partial
        figures, or none)."""
        row = self._db.one("SELECT * FROM eval_runs WHERE state = ? ORDER BY finished_at DESC LIMIT 1", (SUCCEEDED,))
        return _run(row) if row is not None else None

    def count_by_state(self) -> dict[str, int]:
        return {r["state"]: int(r["n"]) for r in
                self._db.query("SELECT state, COUNT(*) AS n FROM eval_runs GROUP BY state")}


def summarise(results: Sequence[ItemResult]) -> dict[str, Any]:
    """``totals.breakdown`` of a run's results, with the count of items the engine failed on (``errors``)."""
    computed = scoring.breakdown(results)
    computed["overall"]["errors"] = sum(1 for r in results if r.error)
    return computed


def _kinds(items: Sequence[EvalItem]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item.kind] = counts.get(item.kind, 0) + 1
    return counts


def _run(row: Any) -> EvalRun:
    totals = row["totals"]
    return EvalRun(row["id"], row["set_id"], row["set_name"], row["label"], row["state"], int(row["total"]),
                   int(row["completed"]), RunSettings.from_json(json.loads(row["settings"])),
                   json.loads(row["identities"]), float(row["created_at"]),
                   float(row["finished_at"]) if row["finished_at"] is not None else None, row["error"] or "",
                   bool(row["cancel_requested"]), json.loads(totals) if totals else None)
