"""Protobuf <-> domain conversions for retrieval, answers and the agent graph (mapping only)."""

from __future__ import annotations

from collections.abc import Sequence

from docuthinker.rag.v1 import answers_pb2, documents_pb2
from docuthinker.rag.v1 import rag_service_pb2 as pb
from services.rag.agents.graph import AgentResult, NodeEvent, Step
from services.rag.answers.model import Citation, GroundedAnswer
from services.rag.documents import Chunk
from services.rag.ingest.timecodes import time_range
from services.rag.retrieval import RetrievedChunk


def provenance_pb(chunk: Chunk) -> documents_pb2.Provenance:
    p = chunk.provenance
    return documents_pb2.Provenance(
        document_id=p.document_id, filename=p.filename, page=p.page, sheet_name=p.sheet_name,
        row_start=p.row_start, row_end=p.row_end, heading_path=list(p.heading_path),
        char_start=p.char_start, char_end=p.char_end, start_seconds=p.start_seconds, end_seconds=p.end_seconds,
        version=p.version,
    )


def scored_chunk_pb(hit: RetrievedChunk) -> answers_pb2.ScoredChunk:
    return answers_pb2.ScoredChunk(
        chunk_id=hit.chunk.chunk_id, text=hit.chunk.text, score=hit.score, provenance=provenance_pb(hit.chunk),
        dense_score=hit.dense_score, keyword_score=hit.keyword_score,
    )


def scored_chunks_pb(hits: Sequence[RetrievedChunk]) -> list[answers_pb2.ScoredChunk]:
    return [scored_chunk_pb(h) for h in hits]


def citation_pb(citation: Citation) -> answers_pb2.Citation:
    p = citation.chunk.provenance
    start_s, end_s = time_range(p.time_starts, citation.char_start, citation.char_end)
    return answers_pb2.Citation(
        marker=citation.marker, document_id=p.document_id, filename=p.filename, page=p.page,
        sheet_name=p.sheet_name, row_start=p.row_start, row_end=p.row_end, char_start=citation.char_start,
        char_end=citation.char_end, excerpt=citation.excerpt, chunk_id=citation.chunk.chunk_id, score=citation.score,
        heading_path=list(p.heading_path), start_seconds=start_s, end_seconds=end_s,
        row_label=citation.row_label, column_header=citation.column_header,
        answer_char_start=max(citation.answer_start, 0), answer_char_end=max(citation.answer_end, 0),
        short_answer=citation.short_answer, answer_type=citation.answer_type, document_version=p.version,
    )


def answer_pb(answer: GroundedAnswer) -> answers_pb2.Answer:
    u = answer.usage
    return answers_pb2.Answer(
        question=answer.question,
        answer=answer.answer,
        citations=[citation_pb(c) for c in answer.citations],
        retrieved_chunks=scored_chunks_pb(answer.retrieved),
        support_status=int(answer.support_status),
        confidence_note=answer.confidence_note,
        engine=answers_pb2.Engine(provider=answer.engine.provider, model=answer.engine.model),
        usage=answers_pb2.Usage(input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                                cache_read_tokens=u.cache_read_tokens, cache_write_tokens=u.cache_write_tokens,
                                cost_usd=u.cost_usd),
    )


def step_pb(step: Step) -> answers_pb2.AgentStep:
    return answers_pb2.AgentStep(node=step.node, summary=step.summary, duration_ms=step.duration_ms)


def agent_response_pb(result: AgentResult) -> pb.AgentQueryResponse:
    return pb.AgentQueryResponse(
        answer=answer_pb(result.answer),
        execution_summary=answers_pb2.ExecutionSummary(
            planned_queries=list(result.planned_queries),
            retrieval_performed=result.retrieval_performed,
            chunks_retrieved=result.chunks_retrieved,
            validation_passed=result.validation_passed,
            support_status=int(result.support_status),
            steps=[step_pb(s) for s in result.steps],
            retries=result.retries,
        ),
    )


def node_event_pb(event: NodeEvent) -> pb.AgentNodeEvent:
    state = event.state
    plan = state.get("plan")
    answer = state.get("answer")
    evidence = state.get("evidence", [])
    return pb.AgentNodeEvent(
        step=step_pb(event.step),
        planned_queries=list(plan.sub_queries) if plan else [],
        chunks_retrieved=len({h.chunk.chunk_id for hits in evidence for h in hits}),
        draft_answer=answer.answer if answer is not None and event.step.node in ("reasoner", "validator") else "",
        support_status=int(state["support_status"]) if event.step.node == "validator" else 0,
    )
