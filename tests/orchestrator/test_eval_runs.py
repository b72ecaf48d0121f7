"""Evaluation runs on both storage backends: background jobs with progress, scoring by the bench rule,
cancellation, the per-tenant quota, leases, tenancy, comparison and export."""

from __future__ import annotations

import asyncio
import csv
import io
import json

import pytest

from services.orchestrator.evals.compare import compare
from services.orchestrator.evals.export import export
from services.orchestrator.evals.records import (
    AGENT,
    CANCELLED,
    FAILED,
    INTERRUPTED,
    RUNNING,
    SUCCEEDED,
    CitedSpan,
    RunSettings,
)
from services.orchestrator.evals.runner import EngineAnswer, EvalRunner
from services.orchestrator.evals.sets import parse_set
from services.orchestrator.evals.store import EvalStore
from services.runtime import request_context
from services.runtime.errors import FailedPrecondition, InvalidArgument, NotFound, ResourceExhausted, Unavailable

pytestmark = pytest.mark.store_backends

SET_CSV = (
    "id,question,answers,document,page,kind,tags\n"
    "k,Who keeps the lamp?,the keeper,harbour.pdf,2,name,lighthouse\n"
    "m,What did mooring fees do?,rose by four percent,harbour.pdf,1,fact,\n"
    "u,Who won the 1850 regatta?,unanswerable,,,,near-miss\n"
    "n,How many pilots?,12,harbour.pdf,,number,\n"
)


class ScriptedEngine:
    """Answers from a script keyed by question; records the tenant and settings of each call."""

    def __init__(self, script: dict[str, EngineAnswer | Exception], delay: float = 0.0) -> None:
        self.script = script
        self.delay = delay
        self.calls: list[tuple[str, str, RunSettings]] = []
        self.gate: asyncio.Event | None = None
        self.hold_from = 0
        """Calls from this one on (0-based) wait for ``gate``."""

    async def ask(self, question: str, settings: RunSettings, timeout: float) -> EngineAnswer:
        self.calls.append((request_context.current_tenant(), question, settings))
        if self.gate is not None and len(self.calls) > self.hold_from:
            await self.gate.wait()
        await asyncio.sleep(self.delay)
        reply = self.script.get(question, EngineAnswer("I do not know.", "INSUFFICIENT", ()))
        if isinstance(reply, Exception):
            raise reply
        if settings.top_k == 1 and "mooring" in question.lower():  # a setting that changes one answer
            return EngineAnswer("I do not know.", "INSUFFICIENT", ())
        return reply


def cited(filename: str, page: int, excerpt: str) -> CitedSpan:
    return CitedSpan(filename, "doc-" + filename, page, "", excerpt)


SCRIPT = {
    "Who keeps the lamp?": EngineAnswer("The keeper [1].", "SUPPORTED",
                                        (cited("harbour.pdf", 2, "the keeper inspects the lamp"),), "the keeper",
                                        "local/extractive"),
    "What did mooring fees do?": EngineAnswer("Mooring fees rose by four percent [1].", "SUPPORTED",
                                              (cited("harbour.pdf", 3, "fees rose by four percent"),), "",
                                              "local/extractive"),
    "Who won the 1850 regatta?": EngineAnswer("The Swan [1].", "PARTIAL", (cited("harbour.pdf", 1, "Swan"),)),
    "How many pilots?": Unavailable("rag: down", reason="UNAVAILABLE"),
}


@pytest.fixture
def store(db, clock):
    return EvalStore(db, max_sets=3, clock=clock)


def runner_for(store, engine, **options) -> EvalRunner:
    defaults = {"identities": lambda: {"embedder": "minilm@abc/int8"}, "max_concurrent_runs": 1,
                "item_concurrency": 2, "lease_s": 30.0, "owner": "orchestrator-a"}
    return EvalRunner(store, engine, **{**defaults, **options})


def new_set(store, tenant="t1", text=SET_CSV):
    return store.create_set(tenant, "harbour", parse_set(text.encode(), filename="set.csv"))


async def test_a_run_scores_every_item_with_the_bench_rule_and_stores_totals(store):
    engine = ScriptedEngine(SCRIPT)
    runner = runner_for(store, engine)
    evalset = new_set(store)
    run = runner.start("t1", evalset.id, RunSettings(top_k=4, document_ids=("d1",)), label="baseline")
    assert run.state == RUNNING and run.total == 4
    await runner.wait(run.id, 10)
    done = store.get_run("t1", run.id)
    assert done.state == SUCCEEDED and done.completed == 4 and done.finished_at is not None
    assert done.identities == {"embedder": "minilm@abc/int8", "answer_engines": ["local/extractive"]}
    assert {call[0] for call in engine.calls} == {"t1"}  # the questions are asked as the run's tenant
    assert all(call[2] == RunSettings(top_k=4, document_ids=("d1",)) for call in engine.calls)
    by_id = {r.item.id: r for r in store.results("t1", run.id)}
    assert [r.position for r in store.results("t1", run.id)] == [1, 2, 3, 4]
    assert by_id["k"].correct and by_id["k"].citation_hit and by_id["k"].short_answer == "the keeper"
    assert by_id["m"].correct and not by_id["m"].citation_hit  # right answer, cited from page 3 not 1
    assert not by_id["u"].correct and by_id["u"].answered  # answered an unanswerable question
    assert by_id["n"].error.startswith("UNAVAILABLE") and not by_id["n"].answered and not by_id["n"].refused
    overall = done.totals["overall"]
    assert (overall["answerable"], overall["unanswerable"], overall["errors"]) == (3, 1, 1)
    assert overall["answer_correct"] == pytest.approx(2 / 3, abs=1e-4)
    assert overall["citation_hit"] == pytest.approx(1 / 3, abs=1e-4)
    assert overall["abstention_unanswerable"] == 0.0
    assert set(done.totals["per_kind"]) == {"name", "fact", "number", "unanswerable"}
    assert done.totals["per_tag"]["lighthouse"]["answer_correct"] == 1.0


async def test_progress_is_visible_while_it_runs_and_a_cancel_stops_it_keeping_finished_items(store):
    engine = ScriptedEngine(SCRIPT)
    engine.gate, engine.hold_from = asyncio.Event(), 2  # the third question hangs
    runner = runner_for(store, engine, item_concurrency=1)
    run = runner.start("t1", new_set(store).id, RunSettings())
    while store.get_run("t1", run.id).completed < 2:
        await asyncio.sleep(0.01)
    midway = store.get_run("t1", run.id)
    assert midway.state == RUNNING and midway.completed == 2
    assert store.totals("t1", midway)["overall"]["items"] == midway.completed  # totals so far
    cancelled = await runner.cancel("t1", run.id)
    assert cancelled.state == CANCELLED and cancelled.cancel_requested
    assert cancelled.completed == 2 and len(store.results("t1", run.id)) == 2
    assert runner.running() == 0
    again = await runner.cancel("t1", run.id)  # an ended run is returned as it is
    assert again.state == CANCELLED


async def test_a_cancel_served_by_another_orchestrator_stops_the_run_through_the_database(store):
    engine = ScriptedEngine(SCRIPT, delay=0.05)
    owner = runner_for(store, engine, item_concurrency=1)
    other = runner_for(store, engine, owner="orchestrator-b")
    run = owner.start("t1", new_set(store).id, RunSettings())
    while store.get_run("t1", run.id).completed < 1:
        await asyncio.sleep(0.01)
    flagged = await other.cancel("t1", run.id)  # not its run: it only flags it
    assert flagged.cancel_requested
    await owner.wait(run.id, 10)
    assert store.get_run("t1", run.id).state == CANCELLED
    assert store.get_run("t1", run.id).completed < 4


async def test_the_tenant_quota_on_concurrent_runs_holds_and_frees_when_a_run_ends(store):
    engine = ScriptedEngine(SCRIPT)
    engine.gate = asyncio.Event()
    runner = runner_for(store, engine, max_concurrent_runs=1)
    evalset = new_set(store)
    first = runner.start("t1", evalset.id, RunSettings())
    with pytest.raises(ResourceExhausted) as caught:
        runner.start("t1", evalset.id, RunSettings())
    assert caught.value.reason == "EVAL_RUN_QUOTA"
    other_tenant = runner.start("t2", new_set(store, "t2").id, RunSettings())  # another tenant's quota is its own
    engine.gate.set()
    await runner.wait(first.id, 10)
    await runner.wait(other_tenant.id, 10)
    second = runner.start("t1", evalset.id, RunSettings())
    await runner.wait(second.id, 10)
    assert store.get_run("t1", second.id).state == SUCCEEDED


async def test_two_orchestrators_on_one_database_share_the_tenant_quota(store):
    engine = ScriptedEngine(SCRIPT)
    engine.gate = asyncio.Event()
    a = runner_for(store, engine, max_concurrent_runs=2)
    b = runner_for(store, engine, max_concurrent_runs=2, owner="orchestrator-b")
    evalset = new_set(store)
    runs = [a.start("t1", evalset.id, RunSettings()), b.start("t1", evalset.id, RunSettings())]
    for runner in (a, b):
        with pytest.raises(ResourceExhausted):
            runner.start("t1", evalset.id, RunSettings())
    engine.gate.set()
    await a.wait(runs[0].id, 10)
    await b.wait(runs[1].id, 10)


async def test_a_run_whose_lease_ran_out_is_interrupted_and_frees_its_slot(store, clock):
    engine = ScriptedEngine(SCRIPT)
    engine.gate = asyncio.Event()
    dead = runner_for(store, engine, lease_s=30.0)
    evalset = new_set(store)
    run = dead.start("t1", evalset.id, RunSettings())
    await asyncio.sleep(0)
    clock.advance(31)  # the owner stopped renewing (it died)
    fresh = runner_for(store, ScriptedEngine(SCRIPT), owner="orchestrator-b")
    replacement = fresh.start("t1", evalset.id, RunSettings())
    assert store.get_run("t1", run.id).state == INTERRUPTED
    engine.gate.set()
    await dead.wait(run.id, 10)
    assert store.get_run("t1", run.id).state == INTERRUPTED  # the late owner wrote nothing
    assert store.results("t1", run.id) == []
    await fresh.wait(replacement.id, 10)


async def test_stopping_the_orchestrator_ends_its_runs_interrupted(store):
    engine = ScriptedEngine(SCRIPT)
    engine.gate = asyncio.Event()
    runner = runner_for(store, engine)
    run = runner.start("t1", new_set(store).id, RunSettings())
    await asyncio.sleep(0.01)
    await runner.stop()
    ended = store.get_run("t1", run.id)
    assert ended.state == INTERRUPTED and "stopped" in ended.error


async def test_a_request_error_every_question_would_meet_fails_the_run_at_once(store):
    refusal = InvalidArgument("unknown document", reason="DOCUMENT_NOT_FOUND")
    engine = ScriptedEngine(dict.fromkeys(SCRIPT, refusal))
    runner = runner_for(store, engine, item_concurrency=1)
    run = runner.start("t1", new_set(store).id, RunSettings(document_ids=("nope",)))
    await runner.wait(run.id, 10)
    failed = store.get_run("t1", run.id)
    assert failed.state == FAILED and "unknown document" in failed.error and failed.completed == 0
    assert len(engine.calls) == 1


async def test_bad_run_requests_are_refused_before_any_work(store):
    runner = runner_for(store, ScriptedEngine(SCRIPT))
    evalset = new_set(store)
    with pytest.raises(InvalidArgument) as caught:
        runner.start("t1", evalset.id, RunSettings(mode="fast", top_k=99, document_ids=("",)))
    assert {v.field for v in caught.value.violations} == {"mode", "top_k", "document_ids"}
    with pytest.raises(NotFound):
        runner.start("t1", "missing", RunSettings())


async def test_sets_and_runs_are_tenant_scoped(store):
    runner = runner_for(store, ScriptedEngine(SCRIPT))
    evalset = new_set(store, "t1")
    run = runner.start("t1", evalset.id, RunSettings())
    await runner.wait(run.id, 10)
    for call in (lambda: store.get_set("t2", evalset.id), lambda: store.get_run("t2", run.id),
                 lambda: store.delete_set("t2", evalset.id), lambda: store.request_cancel("t2", run.id),
                 lambda: runner.start("t2", evalset.id, RunSettings())):
        with pytest.raises(NotFound):
            call()
    assert store.list_sets("t2", 10) == ([], 0)
    assert store.list_runs("t2", "", 10) == ([], 0)
    assert store.results("t2", run.id) == []
    assert [(s.id, dict(s.kinds)) for s in store.list_sets("t1", 10)[0]] == [
        (evalset.id, {"name": 1, "fact": 1, "unanswerable": 1, "number": 1})]
    assert store.get_set("t1", evalset.id).items[0].question == "Who keeps the lamp?"


async def test_set_quota_and_deleting_a_set_with_its_runs(store):
    engine = ScriptedEngine(SCRIPT)
    engine.gate = asyncio.Event()
    runner = runner_for(store, engine)
    sets = [new_set(store) for _ in range(3)]
    with pytest.raises(ResourceExhausted):
        new_set(store)
    run = runner.start("t1", sets[0].id, RunSettings())
    with pytest.raises(FailedPrecondition):
        store.delete_set("t1", sets[0].id)
    with pytest.raises(FailedPrecondition):
        store.delete_run("t1", run.id)
    engine.gate.set()
    await runner.wait(run.id, 10)
    assert store.delete_set("t1", sets[0].id) == 1
    with pytest.raises(NotFound):
        store.get_run("t1", run.id)
    assert store.results("t1", run.id) == []
    new_set(store)  # room again


async def test_two_runs_that_differ_by_a_setting_compare_item_by_item(store):
    runner = runner_for(store, ScriptedEngine(SCRIPT), max_concurrent_runs=2)
    evalset = new_set(store)
    wide = runner.start("t1", evalset.id, RunSettings(top_k=6), label="top 6")
    narrow = runner.start("t1", evalset.id, RunSettings(top_k=1, mode=AGENT), label="top 1")
    await runner.wait(wide.id, 10)
    await runner.wait(narrow.id, 10)
    base, candidate = store.get_run("t1", wide.id), store.get_run("t1", narrow.id)
    result = compare(base, store.results("t1", base.id), store.totals("t1", base),
                     candidate, store.results("t1", candidate.id), store.totals("t1", candidate))
    changes = {c.item_id: c.change for c in result.items}
    assert changes == {"k": "same", "m": "worse", "u": "same", "n": "same"}
    assert result.counts["worse"] == 1 and result.counts["better"] == 0
    assert {d.name: (d.base, d.candidate) for d in result.differences} == {
        "settings.top_k": (6, 1), "settings.mode": ("answer", "agent")}
    assert result.deltas["answer_correct"] == pytest.approx(-1 / 3, abs=1e-3)
    reverse = compare(candidate, store.results("t1", candidate.id), store.totals("t1", candidate),
                      base, store.results("t1", base.id), store.totals("t1", base))
    assert {c.item_id: c.change for c in reverse.items}["m"] == "better"


async def test_export_as_csv_and_json(store):
    runner = runner_for(store, ScriptedEngine(SCRIPT))
    run = runner.start("t1", new_set(store).id, RunSettings())
    await runner.wait(run.id, 10)
    done = store.get_run("t1", run.id)
    data, content_type = export(done, store.totals("t1", done), store.results("t1", run.id), "csv")
    assert content_type.startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(data.decode())))
    assert [r["id"] for r in rows] == ["k", "m", "u", "n"]
    assert rows[0]["correct"] == "1" and rows[0]["cited"] == "1" and rows[0]["citations"] == "harbour.pdf p2"
    assert rows[2]["expected_answers"] == "unanswerable" and rows[3]["error"].startswith("UNAVAILABLE")
    data, content_type = export(done, store.totals("t1", done), store.results("t1", run.id), "json")
    body = json.loads(data)
    assert body["state"] == SUCCEEDED and len(body["items"]) == 4 and body["totals"]["overall"]["items"] == 4
    with pytest.raises(InvalidArgument):
        export(done, {}, [], "xlsx")


async def test_the_last_finished_run_is_read_mesh_wide_for_metrics(store):
    assert store.last_finished() is None
    runner = runner_for(store, ScriptedEngine(SCRIPT))
    run = runner.start("t1", new_set(store).id, RunSettings())
    await runner.wait(run.id, 10)
    assert store.last_finished().id == run.id
    failing = runner_for(store, ScriptedEngine(dict.fromkeys(SCRIPT, InvalidArgument("no", reason="BAD"))))
    later = failing.start("t2", new_set(store, "t2").id, RunSettings())
    await failing.wait(later.id, 10)
    assert store.last_finished().id == run.id  # a failed run has no figures to show
    assert store.count_by_state() == {SUCCEEDED: 1, FAILED: 1}
