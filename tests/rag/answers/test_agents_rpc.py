"""The agent graph through the real in-process server: planning, each support status, retries, streaming."""

from __future__ import annotations

from docuthinker.rag.v1 import answers_pb2
from docuthinker.rag.v1 import rag_service_pb2 as pb

SUPPORTED = answers_pb2.SUPPORT_STATUS_SUPPORTED
PARTIAL = answers_pb2.SUPPORT_STATUS_PARTIAL
INSUFFICIENT = answers_pb2.SUPPORT_STATUS_INSUFFICIENT


async def test_single_question_is_supported_and_summarised(rag):
    reply = await rag.agent("acme", "Who opened the Lyon warehouse?")
    summary = reply.execution_summary
    assert reply.answer.support_status == SUPPORTED == summary.support_status
    assert "Claire Dubois" in reply.answer.answer
    assert list(summary.planned_queries) == ["Who opened the Lyon warehouse?"]
    assert summary.retrieval_performed and summary.validation_passed and summary.chunks_retrieved > 0
    assert [s.node for s in summary.steps] == ["planner", "retriever", "reasoner", "validator"]
    assert all(s.duration_ms >= 0 and s.summary for s in summary.steps)
    assert summary.retries == 0


async def test_two_part_question_with_one_part_in_the_documents_is_partial(rag):
    reply = await rag.agent("acme", "When was the Lyon warehouse opened and who founded Globex?")
    summary = reply.execution_summary
    assert list(summary.planned_queries) == ["When was the Lyon warehouse opened?", "Who founded Globex?"]
    assert reply.answer.support_status == PARTIAL == summary.support_status
    assert not summary.validation_passed
    assert "1998" in reply.answer.answer and "Scorpio" not in reply.answer.answer
    assert "Who founded Globex?" in reply.answer.confidence_note
    # The validator sent the graph back once for more retrieval, then accepted the outcome.
    assert summary.retries == 1
    assert [s.node for s in summary.steps] == ["planner", "retriever", "reasoner", "validator",
                                               "retriever", "reasoner", "validator"]


async def test_two_answerable_parts_are_both_answered_and_cited(rag):
    reply = await rag.agent("acme", "1. How often are turbine blades inspected? 2. When does the cafeteria serve lunch?")
    assert len(reply.execution_summary.planned_queries) == 2
    assert reply.answer.support_status == SUPPORTED
    assert "six months" in reply.answer.answer and "noon" in reply.answer.answer
    assert [c.marker for c in reply.answer.citations] == [1, 2]


async def test_question_outside_the_documents_is_insufficient(rag):
    reply = await rag.agent("acme", "What is the population of Jupiter's moon Io?")
    assert reply.answer.support_status == INSUFFICIENT == reply.execution_summary.support_status
    assert reply.execution_summary.retries == 1


async def test_greeting_does_not_retrieve(rag):
    reply = await rag.agent("acme", "Hello there!")
    summary = reply.execution_summary
    assert not summary.retrieval_performed and summary.chunks_retrieved == 0
    assert list(summary.planned_queries) == []
    assert [s.node for s in summary.steps] == ["planner", "reasoner", "validator"]
    assert summary.support_status == answers_pb2.SUPPORT_STATUS_UNSPECIFIED and not reply.answer.citations


async def test_stream_agent_query_emits_one_event_per_node_then_done(rag):
    events = [e async for e in rag.stub.StreamAgentQuery(
        pb.StreamAgentQueryRequest(question="Who opened the Lyon warehouse?"), metadata=rag.meta("acme"))]
    nodes = [e.node.step.node for e in events if e.WhichOneof("event") == "node"]
    assert nodes == ["planner", "retriever", "reasoner", "validator"]
    assert events[-1].WhichOneof("event") == "done"
    done = events[-1].done
    assert [s.node for s in done.execution_summary.steps] == nodes
    assert events[0].node.planned_queries == ["Who opened the Lyon warehouse?"]
    assert "Claire Dubois" in events[2].node.draft_answer
    assert events[3].node.support_status == SUPPORTED
