"""The answer engine behind the chat API: the rag service's grounded Query, StreamQuery and AgentQuery
through its typed client (``services.clients.rag``)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from docuthinker.rag.v1 import answers_pb2
from services.clients.rag import RagClient
from services.openai_api import errors
from services.orchestrator.tokens import estimate_tokens
from services.runtime.errors import RemoteError
from services.runtime.request_context import TENANT_HEADER

ANSWER_TIMEOUT_S = 120.0
"""Deadline of one answer (unary or streamed): Envoy's unary route timeout."""


@dataclass(frozen=True)
class WireCitation:
    """A citation as the chat API shows it: the ``[marker]`` in the text and the exact span it points at."""

    marker: int
    document_id: str
    filename: str
    page: int
    excerpt: str
    char_start: int
    char_end: int
    sheet_name: str = ""
    row_start: int = 0
    row_end: int = 0
    heading_path: tuple[str, ...] = ()
    score: float = 0.0

    @classmethod
    def of(cls, citation: answers_pb2.Citation) -> WireCitation:
        return cls(citation.marker, citation.document_id, citation.filename, citation.page, citation.excerpt,
                   citation.char_start, citation.char_end, citation.sheet_name, citation.row_start,
                   citation.row_end, tuple(citation.heading_path), round(citation.score, 4))

    def as_json(self) -> dict[str, Any]:
        return {"marker": self.marker, "document_id": self.document_id, "filename": self.filename,
                "page": self.page, "sheet_name": self.sheet_name, "row_start": self.row_start,
                "row_end": self.row_end, "char_start": self.char_start, "char_end": self.char_end,
                "excerpt": self.excerpt, "heading_path": list(self.heading_path), "score": self.score}


@dataclass(frozen=True)
class GroundedAnswer:
    text: str
    citations: tuple[WireCitation, ...]
    support_status: str
    confidence_note: str
    engine: dict[str, str]
    input_tokens: int = 0
    output_tokens: int = 0
    evidence_tokens: int = 0
    """The passages the engine read (its retrieved chunks), at the mesh's token estimate."""

    @classmethod
    def of(cls, answer: answers_pb2.Answer) -> GroundedAnswer:
        return cls(
            answer.answer, tuple(WireCitation.of(c) for c in answer.citations),
            answers_pb2.SupportStatus.Name(answer.support_status), answer.confidence_note,
            {"provider": answer.engine.provider, "model": answer.engine.model},
            int(answer.usage.input_tokens), int(answer.usage.output_tokens),
            sum(estimate_tokens(chunk.text) for chunk in answer.retrieved_chunks),
        )


@dataclass(frozen=True)
class Question:
    text: str
    tenant: str
    document_ids: tuple[str, ...] = ()
    top_k: int = 0
    agent: bool = False


@dataclass(frozen=True)
class Delta:
    """A piece of answer text, in order."""

    text: str


@dataclass(frozen=True)
class Done:
    answer: GroundedAnswer


class AnswerEngine:
    """Asks the rag service; failures come out as ``errors.ApiError`` (before or during a stream)."""

    def __init__(self, rag: RagClient) -> None:
        self._rag = rag

    @staticmethod
    def _metadata(question: Question) -> tuple[tuple[str, str], ...]:
        return ((TENANT_HEADER, question.tenant),)

    async def answer(self, question: Question) -> GroundedAnswer:
        try:
            answer = await self._rag.answer(question.text, question.top_k, question.document_ids,
                                            agent=question.agent, metadata=self._metadata(question),
                                            timeout=ANSWER_TIMEOUT_S)
        except RemoteError as exc:
            raise errors.from_remote(exc) from None
        return GroundedAnswer.of(answer)

    async def stream(self, question: Question) -> AsyncGenerator[Delta | Done, None]:
        """Answer deltas as the engine produces them, then ``Done``; the agent graph answers in one delta."""
        if question.agent:
            answer = await self.answer(question)
            yield Delta(answer.text)
            yield Done(answer)
            return
        events = self._rag.stream_answer(question.text, question.top_k, question.document_ids,
                                         metadata=self._metadata(question), timeout=ANSWER_TIMEOUT_S)
        try:
            async for event in events:
                kind = event.WhichOneof("event")
                if kind == "answer_delta":
                    yield Delta(event.answer_delta)
                elif kind == "done":
                    yield Done(GroundedAnswer.of(event.done))
                    return
                elif kind == "error":
                    raise errors.from_status(event.error)
        except RemoteError as exc:
            raise errors.from_remote(exc) from None
        finally:
            await events.aclose()
        raise errors.ApiError(502, "the answer stream ended without an answer", "api_error", "incomplete_stream")
