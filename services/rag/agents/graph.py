"""The planner → retriever → reasoner → validator agent graph (LangGraph ``StateGraph``).

- planner: retrieval needed? which sub-queries? (``planner.Planner``)
- retriever: runs each sub-query that still lacks evidence (tenant-scoped hybrid search)
- reasoner: one answer from all evidence, one part per sub-query (generative when a provider
  serves answers, else extractive)
- validator: checks each answer sentence against its cited chunk (``SupportChecker``); when
  some part is unsupported it may send the graph back to the retriever ONCE, with twice the k
  and a keyword reformulation of the failing sub-queries.
Each node appends a timed step; ``stream`` yields one event per node as it completes.
"""

from __future__ import annotations

import operator
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

from services.rag.agents.merge import merge_parts
from services.rag.agents.planner import Plan, Planner
from services.rag.answers import lexical
from services.rag.answers.answering import AnswerService
from services.rag.answers.injection import assess_question
from services.rag.answers.model import GroundedAnswer, SupportStatus
from services.rag.answers.support import SupportChecker, answer_status, confidence_note
from services.rag.retrieval import RetrievedChunk

CHIT_CHAT_REPLY = "Hello! Ask me a question about your documents and I will answer from them, with citations."
MAX_RETRIES = 1


@dataclass(frozen=True)
class Step:
    node: str
    summary: str
    duration_ms: float


class AgentState(TypedDict, total=False):
    tenant: str
    question: str
    top_k: int
    document_ids: tuple[str, ...]
    plan: Plan
    evidence: list[list[RetrievedChunk]]
    """Retrieved chunks per sub-query."""
    pending: list[int]
    """Sub-queries the retriever must (re)run."""
    k: int
    retries: int
    answer: GroundedAnswer
    support_status: SupportStatus
    validation_passed: bool
    steps: Annotated[list[Step], operator.add]


@dataclass(frozen=True)
class AgentResult:
    answer: GroundedAnswer
    planned_queries: tuple[str, ...]
    retrieval_performed: bool
    chunks_retrieved: int
    validation_passed: bool
    support_status: SupportStatus
    steps: tuple[Step, ...]
    retries: int


@dataclass(frozen=True)
class NodeEvent:
    step: Step
    state: AgentState


def _timed(name: str, fn: Callable[[AgentState], Awaitable[tuple[dict[str, Any], str]]]):
    async def node(state: AgentState) -> dict[str, Any]:
        started = time.perf_counter()
        update, summary = await fn(state)
        update["steps"] = [Step(name, summary, round((time.perf_counter() - started) * 1000, 2))]
        return update

    return node


def _reformulate(query: str) -> str:
    """Keyword form of a sub-query: a different embedding, the same BM25 terms."""
    words = [w for w in lexical.tokens(query) if lexical.content_terms(w)]
    return " ".join(words) or query


class AgentGraph:
    def __init__(self, answers: AnswerService, planner: Planner, checker: SupportChecker) -> None:
        self._answers = answers
        self._planner = planner
        self._checker = checker
        self._graph = self._build()

    def _build(self):
        graph = StateGraph(AgentState)
        graph.add_node("planner", _timed("planner", self._plan))
        graph.add_node("retriever", _timed("retriever", self._retrieve))
        graph.add_node("reasoner", _timed("reasoner", self._reason))
        graph.add_node("validator", _timed("validator", self._validate))
        graph.add_edge(START, "planner")
        graph.add_conditional_edges("planner", lambda s: "retriever" if s["plan"].needs_retrieval else "reasoner")
        graph.add_edge("retriever", "reasoner")
        graph.add_edge("reasoner", "validator")
        graph.add_conditional_edges("validator", lambda s: "retriever" if s.get("pending") else END)
        return graph.compile()

    async def _plan(self, state: AgentState) -> tuple[dict, str]:
        plan = await self._planner.plan(state["question"])
        parts = list(range(len(plan.sub_queries)))
        if not plan.needs_retrieval:
            return {"plan": plan, "evidence": [], "pending": []}, "No retrieval needed (conversational message)."
        summary = f"Planned {len(parts)} quer{'y' if len(parts) == 1 else 'ies'} ({plan.planner}): " + " | ".join(
            q[:80] for q in plan.sub_queries)
        return {"plan": plan, "evidence": [[] for _ in parts], "pending": parts, "retries": 0,
                "k": state["top_k"] or self._answers.retriever.config.default_top_k}, summary

    async def _retrieve(self, state: AgentState) -> tuple[dict, str]:
        evidence = [list(e) for e in state["evidence"]]
        retry = state.get("retries", 0) > 0
        k = min(state["k"] * (2 if retry else 1), self._answers.max_top_k)
        for part in state["pending"]:
            query = assess_question(state["plan"].sub_queries[part]).cleaned
            if retry:
                query = _reformulate(query)
            # The same evidence /v1/query answers from: a wider fused pool reordered by its sentences.
            hits = await self._answers.evidence_for(state["tenant"], query, k, state["document_ids"] or ())
            known = {h.chunk.chunk_id for h in evidence[part]}
            evidence[part] += [h for h in hits if h.chunk.chunk_id not in known]
        total = len({h.chunk.chunk_id for e in evidence for h in e})
        what = f"Re-retrieved (k={k}, reformulated)" if retry else "Retrieved"
        return {"evidence": evidence, "pending": [], "k": k}, f"{what}: {total} relevant chunks in total."

    async def _reason(self, state: AgentState) -> tuple[dict, str]:
        plan = state["plan"]
        if not plan.needs_retrieval:
            answer = GroundedAnswer(state["question"], CHIT_CHAT_REPLY, (), (), SupportStatus.NOT_APPLICABLE,
                                    confidence_note(SupportStatus.NOT_APPLICABLE))
            return {"answer": answer}, "Replied without documents."
        parts = [(query, await self._answers.compose(query, evidence))
                 for query, evidence in zip(plan.sub_queries, state["evidence"], strict=True)]
        merged = _merge(state["evidence"])
        answer = merge_parts(state["question"], parts, merged)
        answered = sum(not a.abstained for _, a in parts)
        return {"answer": answer}, (f"Answered {answered}/{len(parts)} part(s) from {len(merged)} chunks "
                                    f"with {len(answer.citations)} citations ({answer.engine.provider}).")

    async def _validate(self, state: AgentState) -> tuple[dict, str]:
        answer = state["answer"]
        if not state["plan"].needs_retrieval:
            return {"support_status": SupportStatus.NOT_APPLICABLE, "validation_passed": True, "pending": []}, \
                "Nothing to validate."
        by_marker = {c.marker: c for c in answer.citations}
        flags = []
        for sentence in answer.sentences:
            evidence = [by_marker[m].chunk.text for m in sentence.markers if m in by_marker]
            flags.append(self._checker.check(sentence.text, evidence).supported)
        answered_parts = {s.part for s, ok in zip(answer.sentences, flags, strict=True) if ok}
        n_parts = len(state["plan"].sub_queries)
        missing = [p for p in range(n_parts) if p not in answered_parts] if n_parts > 1 else []
        status = answer_status(flags, unanswered_parts=len(missing))
        pending: list[int] = []
        if status is not SupportStatus.SUPPORTED and state.get("retries", 0) < MAX_RETRIES:
            pending = missing or list(range(n_parts))
        summary = f"{sum(flags)}/{len(flags)} sentences supported: {status.name}"
        if pending:
            summary += "; retrying retrieval once for " + ", ".join(str(p + 1) for p in pending)
        update: dict[str, Any] = {"support_status": status, "validation_passed": status is SupportStatus.SUPPORTED,
                                  "pending": pending}
        if pending:
            update["retries"] = state.get("retries", 0) + 1
        return update, summary

    def _initial(self, tenant: str, question: str, top_k: int, document_ids: Sequence[str]) -> AgentState:
        request = self._answers.validate(question, top_k, document_ids)
        return {"tenant": tenant, "question": request.question, "top_k": request.top_k,
                "document_ids": request.document_ids, "steps": []}

    async def run(self, tenant: str, question: str, top_k: int = 0, document_ids: Sequence[str] = ()) -> AgentResult:
        result = None
        async for event in self.stream(tenant, question, top_k, document_ids):
            if isinstance(event, AgentResult):
                result = event
        assert result is not None
        return result

    async def stream(self, tenant: str, question: str, top_k: int = 0,
                     document_ids: Sequence[str] = ()) -> AsyncIterator[NodeEvent | AgentResult]:
        state = self._initial(tenant, question, top_k, document_ids)
        await self._answers.check_documents(tenant, state["document_ids"])
        async for update in self._graph.astream(state, stream_mode="updates"):
            for delta in update.values():
                steps = delta.get("steps", [])
                state = {**state, **delta, "steps": state["steps"] + steps}
                for step in steps:
                    yield NodeEvent(step, state)
        yield _result(state)


def _merge(evidence: Sequence[Sequence[RetrievedChunk]]) -> list[RetrievedChunk]:
    merged: dict[str, RetrievedChunk] = {}
    for hits in evidence:
        for hit in hits:
            if hit.chunk.chunk_id not in merged or merged[hit.chunk.chunk_id].score < hit.score:
                merged[hit.chunk.chunk_id] = hit
    return sorted(merged.values(), key=lambda h: -h.score)


def _result(state: AgentState) -> AgentResult:
    answer = state["answer"]
    status = state["support_status"]
    if status is not answer.support_status:
        answer = replace(answer, support_status=status, confidence_note=confidence_note(status))
    plan = state["plan"]
    return AgentResult(
        answer=answer,
        planned_queries=plan.sub_queries,
        retrieval_performed=plan.needs_retrieval,
        chunks_retrieved=len({h.chunk.chunk_id for e in state.get("evidence", []) for h in e}),
        validation_passed=state["validation_passed"],
        support_status=status,
        steps=tuple(state["steps"]),
        retries=state.get("retries", 0),
    )
