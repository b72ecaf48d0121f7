"""gRPC transport of per-user conversations (``user_conversations``, ``conversation_answers``): maps only.

The owner is always the caller's subject (the bearer token's ``sub``, from the gateway); the two admin calls
name another user of the caller's tenant and need the admin role.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from google.protobuf import json_format

from docuthinker.orchestrator.v1 import orchestrator_service_pb2 as pb
from docuthinker.rag.v1 import answers_pb2
from services.orchestrator.conversation_answers import (
    CitationFound,
    ConversationAnswers,
    Delta,
    Resolved,
    Started,
    Stored,
)
from services.orchestrator.user_conversations import ConversationInfo, Turn, UserConversations
from services.orchestrator.wire import timestamp
from services.runtime.errors import FieldViolation, InvalidArgument, PermissionDenied
from services.runtime.request_context import caller_is_admin, current_subject, current_tenant

DEFAULT_PAGE = 50
MAX_PAGE = 200


def conversation_pb(info: ConversationInfo, with_subject: bool = False) -> pb.Conversation:
    return pb.Conversation(
        conversation_id=info.conversation_id, title=info.title, document_ids=list(info.document_ids),
        turn_count=info.turn_count, create_time=timestamp(info.created_at), update_time=timestamp(info.updated_at),
        subject=info.subject if with_subject else "",
    )


def turn_pb(turn: Turn) -> pb.ConversationTurn:
    answer = answers_pb2.Answer()
    json_format.ParseDict(turn.answer, answer, ignore_unknown_fields=True)
    return pb.ConversationTurn(turn_id=turn.turn_id, question=turn.question, resolved_question=turn.resolved_question,
                               answer=answer, create_time=timestamp(turn.created_at))


def _page(size: int) -> int:
    if size < 0:
        raise InvalidArgument("page_size must not be negative", reason="BAD_PAGE_SIZE",
                              violations=[FieldViolation("page_size", f"0 (default {DEFAULT_PAGE}) to {MAX_PAGE}")])
    return min(size or DEFAULT_PAGE, MAX_PAGE)


def _admin() -> None:
    if not caller_is_admin():
        raise PermissionDenied("only an admin may read another user's conversations", reason="ADMIN_ROLE_REQUIRED")


class ConversationRpcs:
    """Mixed into ``OrchestratorServicer``: needs ``_conversations`` and ``_answers``."""

    _conversations: UserConversations
    _answers: ConversationAnswers

    async def ListConversations(self, request: pb.ListConversationsRequest, context) -> pb.ListConversationsResponse:
        found = self._conversations.recent(current_tenant(), current_subject(), _page(request.page_size))
        return pb.ListConversationsResponse(conversations=[conversation_pb(c) for c in found])

    async def CreateConversation(self, request: pb.CreateConversationRequest, context) -> pb.CreateConversationResponse:
        info = self._conversations.create(current_tenant(), current_subject(), request.title, request.document_ids)
        return pb.CreateConversationResponse(conversation=conversation_pb(info))

    async def ReadConversation(self, request: pb.ReadConversationRequest, context) -> pb.ReadConversationResponse:
        tenant, subject = current_tenant(), current_subject()
        info = self._conversations.get(tenant, subject, request.conversation_id)
        turns = self._conversations.turns(tenant, subject, request.conversation_id)
        return pb.ReadConversationResponse(conversation=conversation_pb(info), turns=[turn_pb(t) for t in turns])

    async def RenameConversation(self, request: pb.RenameConversationRequest, context) -> pb.RenameConversationResponse:
        info = self._conversations.rename(current_tenant(), current_subject(), request.conversation_id, request.title)
        return pb.RenameConversationResponse(conversation=conversation_pb(info))

    async def DeleteConversation(self, request: pb.DeleteConversationRequest, context) -> pb.DeleteConversationResponse:
        return pb.DeleteConversationResponse(
            deleted=self._conversations.delete(current_tenant(), current_subject(), request.conversation_id))

    async def AskConversation(self, request: pb.AskConversationRequest, context) -> AsyncIterator:
        if request.top_k < 0 or request.top_k > 50:
            raise InvalidArgument("top_k must be 0 to 50", reason="BAD_TOP_K",
                                  violations=[FieldViolation("top_k", "0 (default) to 50")])
        events = self._answers.ask(current_tenant(), current_subject(), request.conversation_id, request.question,
                                   request.document_ids, request.top_k)
        async for event in events:
            if isinstance(event, Started):
                yield pb.AskConversationResponse(conversation=conversation_pb(event.conversation))
            elif isinstance(event, Resolved):
                r = event.resolution
                yield pb.AskConversationResponse(resolved=pb.ResolvedQuestion(
                    question=r.question, resolved=r.resolved, rewritten=r.rewritten, explanation=r.explanation))
            elif isinstance(event, Delta):
                yield pb.AskConversationResponse(answer_delta=event.text)
            elif isinstance(event, CitationFound):
                citation = answers_pb2.Citation()
                json_format.ParseDict(event.citation, citation, ignore_unknown_fields=True)
                yield pb.AskConversationResponse(citation=citation)
            elif isinstance(event, Stored):
                yield pb.AskConversationResponse(done=turn_pb(event.turn))

    async def ListUserConversations(self, request: pb.ListUserConversationsRequest,
                                    context) -> pb.ListUserConversationsResponse:
        _admin()
        found = self._conversations.recent(current_tenant(), request.subject, _page(request.page_size))
        return pb.ListUserConversationsResponse(conversations=[conversation_pb(c, True) for c in found])

    async def ReadUserConversation(self, request: pb.ReadUserConversationRequest,
                                   context) -> pb.ReadUserConversationResponse:
        _admin()
        tenant = current_tenant()
        info = self._conversations.get(tenant, request.subject, request.conversation_id)
        turns = self._conversations.turns(tenant, request.subject, request.conversation_id)
        return pb.ReadUserConversationResponse(conversation=conversation_pb(info, True), turns=[turn_pb(t) for t in turns])
