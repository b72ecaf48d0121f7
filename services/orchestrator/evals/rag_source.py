"""The answer engine an evaluation run asks: the rag service (Query, or AgentQuery in agent mode)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from docuthinker.rag.v1 import answers_pb2
from services.orchestrator.evals.records import AGENT, CitedSpan, RunSettings
from services.orchestrator.evals.runner import EngineAnswer

_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "DSN", "CREDENTIAL")
_NOT_BEHAVIOUR = ("_PORT", "_HOST", "_DIR", "_FILE", "_ADDRESS", "_URL", "_ENDPOINT")
SETTINGS_PREFIXES = ("DOCUTHINKER_RAG_", "DOCUTHINKER_EMBED_", "DOCUTHINKER_PROVIDER", "DOCUTHINKER_LOCAL_",
                     "DOCUTHINKER_STORE_BACKEND", "DOCUTHINKER_POSTGRES_KEYWORD", "DOCUTHINKER_ANSWER")


def _support(status: int) -> str:
    return answers_pb2.SupportStatus.Name(status).removeprefix("SUPPORT_STATUS_")


def engine_answer(answer: answers_pb2.Answer) -> EngineAnswer:
    citations = tuple(CitedSpan(c.filename, c.document_id, c.page, c.sheet_name, c.excerpt, c.short_answer)
                      for c in answer.citations)
    short = next((c.short_answer for c in answer.citations if c.short_answer), "")
    engine = f"{answer.engine.provider}/{answer.engine.model}" if answer.engine.provider else ""
    return EngineAnswer(answer.answer, _support(answer.support_status), citations, short, engine)


class GroundedAnswers(Protocol):
    """``RagClient.answer`` (the orchestrator passes it behind the rag circuit breaker)."""

    async def answer(self, question: str, top_k: int = 0, document_ids: Sequence[str] = (), *, agent: bool = False,
                     timeout: float | None = None) -> answers_pb2.Answer: ...


class RagAnswerSource:
    def __init__(self, rag: GroundedAnswers) -> None:
        self._rag = rag

    async def ask(self, question: str, settings: RunSettings, timeout: float) -> EngineAnswer:
        answer = await self._rag.answer(question, settings.top_k, settings.document_ids,
                                        agent=settings.mode == AGENT, timeout=timeout)
        return engine_answer(answer)


def identities(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What a run records about the mesh it ran on: the embedder's identity and the answer-shaping settings.

    Read from this process's environment, which the launcher gives every service alike (secrets, addresses and
    paths left out); the answer engines that actually answered are added as the run goes.
    """
    from services.models.embedder import identity
    from services.models.settings import embedder_settings

    env = os.environ if environ is None else environ
    chosen = {k: v for k, v in sorted(env.items()) if k.startswith(SETTINGS_PREFIXES)
              and not any(w in k for w in _SECRET_WORDS) and not k.endswith(_NOT_BEHAVIOUR)}
    return {"embedder": identity(embedder_settings().runtime), "settings": chosen}
