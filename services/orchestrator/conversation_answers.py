"""A question asked in a conversation: resolved against the earlier turns, answered with citations, kept.

The answer comes from the rag service's grounded streaming answer (``AnswerSource``), asked the resolved
question over the conversation's documents. Events stream back in order: the conversation (so a new one
is known at once), how the question was read, answer deltas and citations as rag produces them, then the
stored turn. Nothing is stored when the answer fails.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from services.orchestrator.followups import FollowUpResolver, PastTurn, Resolution
from services.orchestrator.user_conversations import NEW, ConversationInfo, Turn, UserConversations, check_question


@dataclass(frozen=True)
class Delta:
    text: str


@dataclass(frozen=True)
class CitationFound:
    citation: dict[str, Any]


@dataclass(frozen=True)
class Answered:
    answer: dict[str, Any]


AnswerEvent = Delta | CitationFound | Answered


class AnswerSource(Protocol):
    def stream(self, question: str, document_ids: Sequence[str], top_k: int) -> AsyncIterator[AnswerEvent]:
        """The grounded answer's deltas and citations, ending with the whole answer (JSON, proto field names)."""
        ...


@dataclass(frozen=True)
class Started:
    conversation: ConversationInfo


@dataclass(frozen=True)
class Resolved:
    resolution: Resolution


@dataclass(frozen=True)
class Stored:
    turn: Turn


ConversationEvent = Started | Resolved | Delta | CitationFound | Stored


def past_turns(turns: Sequence[Turn]) -> list[PastTurn]:
    return [PastTurn(t.resolved_question or t.question, t.answer_text, t.short_answer) for t in turns]


class ConversationAnswers:
    def __init__(self, store: UserConversations, source: AnswerSource, resolver: FollowUpResolver | None = None) -> None:
        self._store = store
        self._source = source
        self._resolver = resolver or FollowUpResolver()

    async def ask(self, tenant: str, subject: str, conversation_id: str, question: str,
                  document_ids: Sequence[str] = (), top_k: int = 0) -> AsyncIterator[ConversationEvent]:
        question = check_question(question)
        if conversation_id.strip() in ("", NEW):
            info = self._store.create(tenant, subject, "", document_ids)
            history: list[Turn] = []
        else:
            info = self._store.get(tenant, subject, conversation_id)
            history = self._store.turns(tenant, subject, info.conversation_id, last=self._resolver.max_turns)
        yield Started(info)
        resolution = self._resolver.resolve(question, past_turns(history))
        yield Resolved(resolution)
        scope = tuple(document_ids) or info.document_ids
        answer: dict[str, Any] | None = None
        async for event in self._source.stream(resolution.resolved, scope, top_k):
            if isinstance(event, Answered):
                answer = event.answer
            else:
                yield event
        if answer is None:
            raise RuntimeError("the answer stream ended without its answer")
        yield Stored(self._store.add_turn(tenant, subject, info.conversation_id, question, resolution.resolved,
                                          answer))


class RagAnswerSource:
    """``AnswerSource`` over the rag service's ``StreamQuery`` (its typed client)."""

    def __init__(self, rag: Any) -> None:
        self._rag = rag

    async def stream(self, question: str, document_ids: Sequence[str], top_k: int) -> AsyncIterator[AnswerEvent]:
        from google.protobuf import json_format

        from services.runtime.errors import status_error

        events = self._rag.stream_answer(question, top_k, list(document_ids))
        try:
            async for event in events:
                kind = event.WhichOneof("event")
                if kind == "answer_delta":
                    yield Delta(event.answer_delta)
                elif kind == "citation":
                    yield CitationFound(json_format.MessageToDict(event.citation, preserving_proto_field_name=True))
                elif kind == "done":
                    yield Answered(json_format.MessageToDict(event.done, preserving_proto_field_name=True))
                    return
                elif kind == "error":
                    raise status_error(event.error, "rag")
        finally:
            await events.aclose()
