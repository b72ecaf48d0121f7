"""Runs the analyst -> cross-referencer -> curator crew over one stored document.

1. Evidence first: for each agent the runner calls its tools itself (``document_search`` with
   a query suited to its task, ``document_topics``), so every prompt is grounded in the
   document's own passages even when the model cannot call tools (the offline model).
2. The crew runs in a worker thread (``kickoff.run_crew``); each agent's LLM calls go to the
   server's loop through the router, its preferred provider first (``engines``).
3. Each answer is tidied (the local model loops and echoes its prompt) and followed by the
   passages it cites (``grounding``); each task reports its agent, the provider and model that
   produced its final answer, the tools that ran for it, its usage, its grounding verdict and
   the exact spans of the document it rests on (none, and said so, when it rests on nothing);
   the crew's usage is the sum over every call.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from services.providers.base import Usage
from services.providers.router import Router
from services.providers.settings import ProviderSettings
from services.rag.answers.model import Citation
from services.rag.crew.engines import TASK, agent_router
from services.rag.crew.evidence import EvidenceSearch, Snippet, Topic, TopicSource, evidence_lines
from services.rag.crew.grounding import Verdict, ground
from services.rag.crew.plan import AgentRun, CrewPlan, Member
from services.rag.crew.roles import ANALYST, CROSS_REFERENCER, CURATOR, ROLES, task_description
from services.rag.crew.scope import ToolLog, ToolScope
from services.rag.crew.settings import CrewSettings
from services.rag.crew.tidy import tidy
from services.rag.documents import DocumentRecord
from services.runtime import request_context

log = logging.getLogger("docuthinker.rag.crew")

DEFAULT_QUESTION = "What are the key points of this document?"
MAX_EVIDENCE = 6
"""Passages per prompt: enough to ground three agents, small enough for a 135M model's attention."""

Kickoff = Callable[[CrewPlan], list[AgentRun]]
TextSource = Callable[[str, str, int], Awaitable[str]]
"""``text(tenant, document_id, limit)``: the document's text, for the NLP topics."""


@dataclass(frozen=True)
class CrewTaskResult:
    agent: str
    role: str
    output: str
    provider: str
    model: str
    tools_used: tuple[str, ...]
    usage: Usage
    grounding: Verdict
    citations: tuple[Citation, ...]
    """The chunks the answer cites or restates, as exact spans of their page text (marker: the passage's number)."""


@dataclass(frozen=True)
class CrewResult:
    document_id: str
    tasks: tuple[CrewTaskResult, ...]
    final_output: str
    usage: Usage
    duration_s: float


def _run_crew(plan: CrewPlan) -> list[AgentRun]:
    from services.rag.crew.kickoff import run_crew  # imports CrewAI: first use only, in the worker thread

    return run_crew(plan)


def _merge(*groups: Sequence[Snippet]) -> list[Snippet]:
    seen: set[str] = set()
    merged = []
    for group in groups:
        for snippet in group:
            if snippet.chunk_id not in seen:
                seen.add(snippet.chunk_id)
                merged.append(snippet)
    return merged[:MAX_EVIDENCE]


class CrewRunner:
    def __init__(
        self,
        search: EvidenceSearch,
        topic_source: TopicSource,
        document_text: TextSource,
        settings: CrewSettings,
        *,
        router: Callable[[], Router],
        providers: Callable[[], ProviderSettings],
        kickoff: Kickoff = _run_crew,
    ) -> None:
        self._search = search
        self._topic_source = topic_source
        self._document_text = document_text
        self.settings = settings
        self._router = router
        self._providers = providers
        self._kickoff = kickoff

    def _scope(self, tenant: str, document_id: str) -> ToolScope:
        limit = self.settings.max_text_chars

        async def text() -> str:
            return await self._document_text(tenant, document_id, limit)

        return ToolScope(tenant=tenant, document_id=document_id, text=text, search=self._search,
                         topic_source=self._topic_source, settings=self.settings, loop=asyncio.get_running_loop(),
                         context=request_context.current(), log=ToolLog())

    async def _evidence(self, scope: ToolScope, question: str) -> dict[str, tuple[list[Topic], list[Snippet]]]:
        """Each agent's topics and passages, gathered with its own tools."""
        topics = await scope.topics(ANALYST.key)
        focus = await scope.find(ANALYST.key, question)
        names = " ".join(t.name for t in topics[:4])
        review = _merge(await scope.find(CROSS_REFERENCER.key, question),
                        await scope.find(CROSS_REFERENCER.key, names) if names else [])
        await scope.topics(CURATOR.key)  # cached: the curator is told the same topics
        outlook = _merge(await scope.find(CURATOR.key, f"{question} actions risks obligations next steps"), focus)
        return {ANALYST.key: (topics, focus), CROSS_REFERENCER.key: ([], review), CURATOR.key: (topics, outlook)}

    def _members(self, question: str, evidence: dict[str, tuple[list[Topic], list[Snippet]]]) -> tuple[Member, ...]:
        shared = self._router()
        members = []
        for role in ROLES:
            routed = agent_router(shared, self._providers(), self.settings.preferred(role.key))
            order = routed.providers_for(TASK)
            topics, passages = evidence[role.key]
            description = task_description(role, question, ", ".join(t.name for t in topics),
                                           evidence_lines(passages))
            members.append(Member(role, description, routed, bind_tools=bool(order) and order[0] != "local"))
        return tuple(members)

    async def analyze(self, tenant: str, record: DocumentRecord, question: str = "") -> CrewResult:
        """Runs the crew over a READY document (see ``DocumentInputs.resolve``)."""
        started = time.monotonic()
        question = " ".join(question.split()) or DEFAULT_QUESTION
        scope = self._scope(tenant, record.document_id)
        evidence = await self._evidence(scope, question)
        plan = CrewPlan(self._members(question, evidence), scope, asyncio.get_running_loop(),
                        self.settings.max_iter, self.settings.max_tokens, self.settings.temperature)
        runs = await asyncio.to_thread(self._kickoff, plan)
        tasks = tuple(_task_result(run, scope.log, evidence[run.role.key][1]) for run in runs)
        usage = sum((t.usage for t in tasks), Usage())
        duration = time.monotonic() - started
        log.info("crew finished", extra={"fields": {
            "document_id": record.document_id, "duration_s": round(duration, 2),
            "engines": ",".join(f"{t.agent}={t.provider}" for t in tasks), "output_tokens": usage.output_tokens}})
        return CrewResult(record.document_id, tasks, tasks[-1].output if tasks else "", usage, duration)


def _task_result(run: AgentRun, tools: ToolLog, passages: Sequence[Snippet]) -> CrewTaskResult:
    final = run.results[-1] if run.results else None
    text = tidy(run.raw, truncated=final is not None and final.stop_reason == "max_tokens")
    grounded = ground(text, passages)
    return CrewTaskResult(
        agent=run.role.agent,
        role=run.role.name,
        output=grounded.text,
        provider=final.provider if final else "",
        model=final.model if final else "",
        tools_used=tools.used(run.role.key),
        usage=sum((r.usage for r in run.results), Usage()),
        grounding=grounded.verdict,
        citations=tuple(c for n in grounded.cited if (c := _citation(n, passages[n - 1])) is not None),
    )


def _citation(marker: int, passage: Snippet) -> Citation | None:
    if passage.hit is None:
        return None
    chunk = passage.hit.chunk
    return Citation(marker, chunk, chunk.provenance.char_start, chunk.provenance.char_end, chunk.text,
                    passage.hit.score)
