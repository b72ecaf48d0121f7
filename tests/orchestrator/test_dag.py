from __future__ import annotations

import asyncio

import pytest

from services.orchestrator.dag import Task, TaskState, aggregate, execute, validate
from services.orchestrator.downstream import is_transient
from services.orchestrator.operations import Outcome
from services.orchestrator.plans import SupervisorRequest, decompose
from services.runtime.errors import FailedPrecondition, InvalidArgument, Unavailable


def test_cycles_and_unknown_dependencies_are_refused():
    with pytest.raises(FailedPrecondition, match="circular"):
        validate([Task("a", "x", depends_on=("c",)), Task("b", "x", depends_on=("a",)), Task("c", "x", depends_on=("b",))])
    with pytest.raises(InvalidArgument):
        validate([Task("a", "x", depends_on=("nope",))])
    with pytest.raises(InvalidArgument):
        validate([Task("a", "x"), Task("a", "y")])
    with pytest.raises(InvalidArgument):
        validate([Task("a", "x"), Task("b", "y", bind={"text": ("a", "text")})])
    assert validate([Task("b", "x", depends_on=("a",)), Task("a", "x")]) == ["a", "b"]


async def collect(tasks, run):
    return [r async for r in execute(tasks, run, is_transient)]


async def test_independent_tasks_run_in_parallel_and_stream_as_they_complete():
    # "slow" ends only after "fast" has, and "fast" starts its work only once "slow" has started: the two
    # finish only if they run at once (run one after the other, the first waits for ever), whatever the
    # machine's load; and "fast" streams first.
    slow_started, fast_done = asyncio.Event(), asyncio.Event()

    async def run(operation, params):
        if params["name"] == "slow":
            slow_started.set()
            await asyncio.wait_for(fast_done.wait(), 30)
        elif params["name"] == "fast":
            await asyncio.wait_for(slow_started.wait(), 30)
            fast_done.set()
        return Outcome({"name": params["name"], "text": f"from {params['name']}"}, "fake")

    tasks = [
        Task("root", "op", {"name": "root"}),
        Task("slow", "op", {"name": "slow"}, ("root",)),
        Task("fast", "op", {"name": "fast"}, ("root",)),
        Task("join", "op", {"name": "join"}, ("slow", "fast"), {"seen": ("fast", "text")}),
    ]
    results = await collect(tasks, run)
    assert [r.task.id for r in results] == ["root", "fast", "slow", "join"]
    assert results[-1].params["seen"] == "from fast"
    assert all(r.state is TaskState.SUCCEEDED for r in results)
    ok, data = aggregate(results)
    assert ok and set(data) == {"root", "slow", "fast", "join"}


async def test_failure_skips_dependents_and_keeps_independent_branches():
    async def run(operation, params):
        if operation == "broken":
            raise InvalidArgument("bad input")
        return Outcome({"ok": True}, "fake")

    tasks = [
        Task("a", "broken"),
        Task("b", "fine", depends_on=("a",)),
        Task("c", "fine", depends_on=("b",)),
        Task("d", "fine"),
    ]
    results = {r.task.id: r for r in await collect(tasks, run)}
    assert results["a"].state is TaskState.FAILED and results["a"].attempts == 1
    assert results["b"].state is TaskState.SKIPPED and results["b"].data == {"blocked_by": ["a"]}
    assert results["c"].state is TaskState.SKIPPED
    assert results["d"].state is TaskState.SUCCEEDED
    ok, data = aggregate(list(results.values()))
    assert not ok and data == {"d": {"ok": True}}


async def test_transient_failure_moves_to_the_next_provider():
    calls: list[str] = []

    async def run(operation, params):
        calls.append(operation)
        if operation == "primary":
            raise Unavailable("provider down")
        return Outcome({"answer": 42}, "backup-provider")

    [result] = await collect([Task("t", "primary", fallbacks=("secondary",))], run)
    assert calls == ["primary", "secondary"]
    assert result.state is TaskState.SUCCEEDED
    assert (result.operation, result.provider, result.attempts) == ("secondary", "backup-provider", 2)


async def test_non_transient_failure_does_not_fail_over():
    calls: list[str] = []

    async def run(operation, params):
        calls.append(operation)
        raise InvalidArgument("caller error")

    [result] = await collect([Task("t", "primary", fallbacks=("secondary",))], run)
    assert calls == ["primary"] and result.state is TaskState.FAILED


def test_upload_decomposes_into_the_seed_dag():
    tasks = decompose("document.upload", SupervisorRequest(text="Some text."))
    assert [(t.id, t.operation, t.depends_on) for t in tasks] == [
        ("upload", "rag.ingest", ()),
        ("extract", "rag.extract", ("upload",)),
        ("summarize", "nlp.summarize", ("extract",)),
        ("key_ideas", "nlp.key_ideas", ("extract",)),
        ("store", "insights.store", ("extract", "summarize", "key_ideas")),
    ]
    stored = decompose("document.upload", SupervisorRequest(document_id="d1"))
    assert stored[0].id == "extract" and stored[0].params == {"document_id": "d1"}


def test_plans_carry_options_and_reject_missing_input():
    [rewrite] = decompose("document.rewrite", SupervisorRequest(text="t", options={"style": "pirate"}))
    assert rewrite.params == {"style": "pirate", "text": "t"}
    with pytest.raises(InvalidArgument):
        decompose("document.translate", SupervisorRequest(text="t"))
    with pytest.raises(InvalidArgument):
        decompose("document.summarize", SupervisorRequest())
    extract, chat = decompose("chat.document", SupervisorRequest(document_id="d", message="why?", user_id="u"))
    assert chat.fallbacks == ("rag.query",) and chat.bind == {"text": ("extract", "text")}
    batch = decompose("batch.multiDocument", SupervisorRequest(document_ids=("a", "b", "c"),
                                                               options={"operation": "sentiment"}))
    assert len(batch) == 6 and all(len(t.depends_on) <= 1 for t in batch)
    with pytest.raises(InvalidArgument, match="audio"):
        decompose("chat.voice", SupervisorRequest(message="hi"))
    [voice] = decompose("chat.voice", SupervisorRequest(audio=b"RIFF", document_ids=("d",), options={"top_k": 3}))
    assert voice.operation == "rag.spoken_query"
    assert voice.params == {"audio": b"RIFF", "document_ids": ["d"], "top_k": 3}
