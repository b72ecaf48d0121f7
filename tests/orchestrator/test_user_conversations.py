"""Per-user conversations: the store on both backends, and the RPCs on the real orchestrator with a fake rag.

The owner is the caller's subject (``x-docuthinker-subject``, set by the gateway from the token's ``sub``),
never a value of the request; the seed's conversation calls (``user_id`` in the path) are held to it too.
"""

from __future__ import annotations

import grpc
import pytest

from docuthinker.orchestrator.v1 import orchestrator_service_pb2 as pb
from services.orchestrator.user_conversations import UserConversations
from services.runtime.errors import InvalidArgument, NotFound, PermissionDenied

DOC = ("Jane Smith wrote the Handbook of Cats in 1998. The Handbook of Cats covers feeding and grooming.\n"
       "The lighthouse keeper inspects the lamp every Tuesday.")


def as_user(subject: str, role: str = "user") -> list[tuple[str, str]]:
    return [("x-docuthinker-subject", subject), ("x-docuthinker-role", role)]


ALICE, BOB = as_user("alice"), as_user("bob")


@pytest.mark.store_backends
class TestStore:
    def test_conversations_are_listed_newest_first_renamed_and_deleted_by_their_owner(self, db, clock):
        store = UserConversations(db, clock=clock)
        first = store.create("t", "alice", "", ["d1"])
        clock.advance(1)
        second = store.create("t", "alice", "Budget questions")
        clock.advance(1)
        store.add_turn("t", "alice", first.conversation_id, "Who wrote the Handbook of Cats?", "Who wrote the Handbook"
                       " of Cats?", {"answer": "Jane Smith", "retrieved_chunks": [{"text": "big"}]})
        listed = store.recent("t", "alice")
        assert [c.conversation_id for c in listed] == [first.conversation_id, second.conversation_id]
        assert listed[0].title == "Who wrote the Handbook of Cats?" and listed[0].turn_count == 1
        assert listed[0].document_ids == ("d1",)
        turn = store.turns("t", "alice", first.conversation_id)[0]
        assert turn.answer == {"answer": "Jane Smith"} and turn.resolved_question == ""  # unchanged: not repeated
        assert store.rename("t", "alice", second.conversation_id, "  Spend  2026 ").title == "Spend 2026"
        assert store.delete("t", "alice", first.conversation_id)
        assert not store.delete("t", "alice", first.conversation_id)
        assert [c.title for c in store.recent("t", "alice")] == ["Spend 2026"]

    def test_another_users_or_tenants_conversation_is_not_found(self, db, clock):
        store = UserConversations(db, clock=clock)
        mine = store.create("t", "alice")
        for tenant, subject in (("t", "bob"), ("other", "alice")):
            with pytest.raises(NotFound):
                store.get(tenant, subject, mine.conversation_id)
            with pytest.raises(NotFound):
                store.add_turn(tenant, subject, mine.conversation_id, "q", "q", {})
            assert not store.delete(tenant, subject, mine.conversation_id)
            assert store.recent(tenant, subject) == []
        assert store.get("t", "alice", mine.conversation_id).conversation_id == mine.conversation_id

    def test_a_caller_without_a_subject_keeps_no_conversation(self, db, clock):
        store = UserConversations(db, clock=clock)
        for nobody in ("", "-"):
            with pytest.raises(PermissionDenied):
                store.create("t", nobody)
            with pytest.raises(PermissionDenied):
                store.recent("t", nobody)

    def test_turns_and_conversations_are_bounded(self, db, clock):
        store = UserConversations(db, clock=clock, max_turns=3, max_per_user=2)
        info = store.create("t", "alice")
        for n in range(5):
            clock.advance(1)
            store.add_turn("t", "alice", info.conversation_id, f"question {n}", "", {"answer": str(n)})
        turns = store.turns("t", "alice", info.conversation_id)
        assert [t.question for t in turns] == ["question 2", "question 3", "question 4"]
        assert store.get("t", "alice", info.conversation_id).turn_count == 3
        clock.advance(1)
        store.create("t", "alice", "b")
        clock.advance(1)
        store.create("t", "alice", "c")
        assert sorted(c.title for c in store.recent("t", "alice")) == ["b", "c"]  # the least recently used left

    def test_titles_and_questions_are_checked(self, db, clock):
        store = UserConversations(db, clock=clock)
        with pytest.raises(InvalidArgument):
            store.create("t", "alice", "x" * 200)
        info = store.create("t", "alice")
        with pytest.raises(InvalidArgument):
            store.rename("t", "alice", info.conversation_id, "   ")


async def ask(stub, conversation_id: str, question: str, metadata, **fields) -> list[pb.AskConversationResponse]:
    call = stub.AskConversation(pb.AskConversationRequest(conversation_id=conversation_id, question=question,
                                                          **fields), metadata=metadata)
    return [event async for event in call]


async def test_a_follow_up_is_answered_as_resolved_against_the_earlier_turn(make_orchestrator, fake_mesh):
    stub = await make_orchestrator().start()
    document_id = fake_mesh.rag.add(DOC, "cats.txt")
    first = await ask(stub, "-", "Who wrote the Handbook of Cats?", ALICE, document_ids=[document_id])
    conversation = first[0].conversation
    assert conversation.conversation_id and list(conversation.document_ids) == [document_id]
    assert not first[1].resolved.rewritten
    deltas = "".join(e.answer_delta for e in first if e.WhichOneof("event") == "answer_delta")
    assert deltas.strip() == first[-1].done.answer.answer and "Jane Smith" in deltas
    assert first[-1].done.answer.citations[0].short_answer == "Jane"
    assert not first[-1].done.answer.retrieved_chunks  # kept without the retrieved chunks

    second = await ask(stub, conversation.conversation_id, "When did she write it?", ALICE)
    resolved = second[1].resolved
    assert resolved.rewritten and "the Handbook of Cats" in resolved.resolved
    assert fake_mesh.rag.streamed[-1] == resolved.resolved  # rag was asked the resolved question
    read = await stub.ReadConversation(pb.ReadConversationRequest(conversation_id=conversation.conversation_id),
                                       metadata=ALICE)
    assert [t.question for t in read.turns] == ["Who wrote the Handbook of Cats?", "When did she write it?"]
    assert read.turns[1].resolved_question == resolved.resolved
    assert read.conversation.title == "Who wrote the Handbook of Cats?" and read.conversation.turn_count == 2


async def test_conversations_belong_to_the_tokens_subject_and_admins_read_others_only_by_the_admin_calls(
        make_orchestrator, fake_mesh):
    stub = await make_orchestrator().start()
    fake_mesh.rag.add(DOC)
    started = await ask(stub, "-", "Who wrote the Handbook of Cats?", ALICE)
    conversation_id = started[0].conversation.conversation_id
    listed = await stub.ListConversations(pb.ListConversationsRequest(), metadata=BOB)
    assert list(listed.conversations) == []
    for call in (lambda: stub.ReadConversation(pb.ReadConversationRequest(conversation_id=conversation_id),
                                                metadata=BOB),
                 lambda: stub.RenameConversation(pb.RenameConversationRequest(conversation_id=conversation_id,
                                                                              title="mine now"), metadata=BOB),
                 lambda: ask(stub, conversation_id, "And the lamp?", BOB)):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call()
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND
    assert not (await stub.DeleteConversation(pb.DeleteConversationRequest(conversation_id=conversation_id),
                                              metadata=BOB)).deleted
    with pytest.raises(grpc.aio.AioRpcError) as not_admin:
        await stub.ListUserConversations(pb.ListUserConversationsRequest(subject="alice"), metadata=BOB)
    assert not_admin.value.code() == grpc.StatusCode.PERMISSION_DENIED
    admin = as_user("root", "admin")
    theirs = await stub.ListUserConversations(pb.ListUserConversationsRequest(subject="alice"), metadata=admin)
    assert [c.conversation_id for c in theirs.conversations] == [conversation_id]
    assert theirs.conversations[0].subject == "alice"
    read = await stub.ReadUserConversation(pb.ReadUserConversationRequest(subject="alice",
                                                                          conversation_id=conversation_id),
                                           metadata=admin)
    assert read.turns[0].question == "Who wrote the Handbook of Cats?"
    with pytest.raises(grpc.aio.AioRpcError) as own_route:  # an admin's own routes show the admin's own only
        await stub.ReadConversation(pb.ReadConversationRequest(conversation_id=conversation_id), metadata=admin)
    assert own_route.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.aio.AioRpcError) as nobody:
        await stub.ListConversations(pb.ListConversationsRequest(), metadata=as_user("-"))
    assert nobody.value.code() == grpc.StatusCode.PERMISSION_DENIED


async def test_the_seed_conversation_calls_serve_only_the_callers_own_user_id(make_orchestrator):
    """#38 item 5: ``user_id`` came from the path, so any user of a tenant read, appended to and cleared
    another's conversation."""
    stub = await make_orchestrator().start()
    await stub.AddConversationMessage(pb.AddConversationMessageRequest(user_id="bob", document_id="d", role="user",
                                                                       content="bob's secret"), metadata=BOB)
    admin = as_user("root", "admin")
    for metadata in (ALICE, admin):
        for call in (
            lambda m: stub.GetConversation(pb.GetConversationRequest(user_id="bob", document_id="d"), metadata=m),
            lambda m: stub.AddConversationMessage(pb.AddConversationMessageRequest(
                user_id="bob", document_id="d", role="user", content="injected"), metadata=m),
            lambda m: stub.ClearConversation(pb.ClearConversationRequest(user_id="bob", document_id="d"), metadata=m),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call(metadata)
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    mine = await stub.GetConversation(pb.GetConversationRequest(user_id="me", document_id="d"), metadata=BOB)
    assert [m.content for m in mine.messages] == ["bob's secret"]
    same = await stub.GetConversation(pb.GetConversationRequest(user_id="bob", document_id="d"), metadata=BOB)
    assert same.message_count == 1


async def test_a_conversation_takes_the_questions_the_answer_service_takes_and_no_longer(make_orchestrator, fake_mesh):
    from services.rag.answers.settings import AnswerSettings

    stub = await make_orchestrator().start()
    document_id = fake_mesh.rag.add(DOC, "cats.txt")
    limit = AnswerSettings().max_question_chars
    longest = "Who wrote the Handbook of Cats? " + "x" * (limit - 32)
    assert len(longest) == limit
    answered = await ask(stub, "-", longest, ALICE, document_ids=[document_id])
    assert answered[-1].WhichOneof("event") == "done"
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await ask(stub, "-", longest + "?", ALICE, document_ids=[document_id])
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "QUESTION_TOO_LONG" in str(
        refused.value.trailing_metadata())
