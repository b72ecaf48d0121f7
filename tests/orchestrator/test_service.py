"""The orchestrator in-process over real gRPC, calling fake NLP/RAG/graph services over real channels."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from docuthinker.orchestrator.v1 import orchestrator_service_pb2 as pb

from .harness import events

DOC = "Ada Lovelace wrote the first program. Charles Babbage designed the engine. It was good work."


async def test_upload_streams_each_subtask_then_the_aggregate(stub, fake_mesh):
    stream = await events(stub.Process(pb.ProcessRequest(intent="document.upload", text=DOC)))
    kinds = [e.WhichOneof("event") for e in stream]
    assert kinds == ["classification"] + ["subtask"] * 5 + ["done"]
    assert stream[0].classification.source == "explicit"
    subtasks = [e.subtask for e in stream[1:-1]]
    order = [s.task_id for s in subtasks]
    assert order[:2] == ["upload", "extract"] and order[-1] == "store"
    assert set(order[2:4]) == {"summarize", "key_ideas"}
    assert all(s.state == pb.TASK_STATE_SUCCEEDED for s in subtasks)
    by_id = {s.task_id: s for s in subtasks}
    assert list(by_id["store"].depends_on) == ["extract", "summarize", "key_ideas"]
    assert by_id["summarize"].provider == "nlp" and by_id["upload"].provider == "rag"
    assert by_id["summarize"].data["summary"] == "Ada Lovelace wrote the first program."
    done = stream[-1].done
    assert done.success and done.trace_id
    assert done.data["intent"] == "document.upload"
    document_id = by_id["upload"].data["document_id"]
    assert document_id in fake_mesh.rag.documents


async def test_chat_on_a_stored_document_uses_the_document_history_and_stored_summary(
    make_orchestrator, fake_mesh
):
    orchestrator = make_orchestrator()
    stub = await orchestrator.start()
    document_id = fake_mesh.rag.add(DOC)
    await events(stub.Process(pb.ProcessRequest(intent="document.upload", document_id=document_id)))
    orchestrator.openai.script = ["Babbage designed it.", "Yes, Ada wrote it."]
    first = await events(stub.Process(pb.ProcessRequest(
        intent="chat.document", document_id=document_id, message="Who designed the engine?", user_id="u1")))
    chat = first[-2].subtask
    assert chat.task_id == "chat" and chat.provider == "openai"
    assert chat.data["response"] == "Babbage designed it."
    await events(stub.Process(pb.ProcessRequest(
        intent="chat.document", document_id=document_id, message="And the program?", user_id="u1")))
    request = orchestrator.openai.requests[-1]
    system = "\n".join(block.text for block in request.system)
    assert "<document_context>" in system and "Charles Babbage designed the engine." in system
    assert "<previous_summary>\nAda Lovelace wrote the first program." in system
    assert [m.content for m in request.messages] == [
        "Who designed the engine?", "Babbage designed it.", "And the program?"]
    conversation = await stub.GetConversation(pb.GetConversationRequest(user_id="u1", document_id=document_id))
    assert conversation.message_count == 4


async def test_chat_fails_over_to_the_next_provider_then_to_a_grounded_rag_answer(make_orchestrator, fake_mesh):
    orchestrator = make_orchestrator()
    stub = await orchestrator.start(providers="openai")
    orchestrator.openai.default = orchestrator.openai.fail()
    document_id = fake_mesh.rag.add(DOC)
    stream = await events(stub.Process(pb.ProcessRequest(
        intent="chat.document", document_id=document_id, message="Who designed the engine?")))
    chat = stream[-2].subtask
    assert chat.state == pb.TASK_STATE_SUCCEEDED
    assert (chat.operation, chat.provider, chat.attempts) == ("rag.query", "rag", 2)
    assert "Babbage" in chat.data["answer"]


async def test_failed_downstream_call_is_dead_lettered_and_replayed(stub, fake_mesh):
    fake_mesh.switches["nlp"].down = True
    stream = await events(stub.Process(pb.ProcessRequest(intent="document.sentiment", text="A good day.")))
    subtask = stream[-2].subtask
    assert subtask.state == pb.TASK_STATE_FAILED
    assert subtask.error.code == grpc.StatusCode.UNAVAILABLE.value[0]
    letter_id = subtask.data["dead_letter_id"]
    assert not stream[-1].done.success
    listed = await stub.ListDeadLetters(pb.ListDeadLettersRequest())
    assert [m.id for m in listed.messages] == [letter_id] and listed.retrying == 1
    assert listed.messages[0].operation == "nlp.sentiment"
    assert listed.messages[0].payload["text"] == "A good day."
    failed = await stub.ReplayDeadLetter(pb.ReplayDeadLetterRequest(id=letter_id))
    assert not failed.success and "service stopped" in failed.message.last_error
    fake_mesh.switches["nlp"].down = False
    replayed = await stub.ReplayDeadLetter(pb.ReplayDeadLetterRequest(id=letter_id))
    assert replayed.success and replayed.message.state == "replayed"
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await stub.ReplayDeadLetter(pb.ReplayDeadLetterRequest(id="nope"))
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND


async def test_downstream_circuit_opens_after_three_failures(stub, fake_mesh):
    fake_mesh.switches["nlp"].down = True
    for _ in range(4):
        await events(stub.Process(pb.ProcessRequest(intent="document.analytics", text="Some words.")))
    circuits = {c.name: c for c in (await stub.ListCircuits(pb.ListCircuitsRequest())).circuits}
    nlp = circuits["service:nlp"]
    assert nlp.state == pb.CIRCUIT_STATE_OPEN and nlp.total_failures == 3
    assert circuits["service:rag"].state == pb.CIRCUIT_STATE_CLOSED
    # three calls, each retried by the channel (3 attempts on UNAVAILABLE); the 4th was refused locally
    assert fake_mesh.switches["nlp"].calls.count("ComputeAnalytics") == 3 * 3


async def test_missing_input_fails_before_the_stream_starts(stub):
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await events(stub.Process(pb.ProcessRequest(intent="document.summarize")))
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_batch_of_25_reports_per_item_results(stub, fake_mesh):
    fake_mesh.nlp.hold_until_in_flight = 11  # more than one batch of 10 at once, however slow the machine
    documents = [pb.BatchDocument(id=f"d{n}", text=f"Document {n} is good.") for n in range(24)]
    documents.append(pb.BatchDocument(id="empty"))
    stream = [e async for e in stub.ProcessBatch(pb.ProcessBatchRequest(documents=documents, operation="sentiment"))]
    items = [e.item for e in stream if e.WhichOneof("event") == "item"]
    progress = [e.progress for e in stream if e.WhichOneof("event") == "progress"]
    assert len(items) == 25 and len(progress) == 25
    assert [p.completed for p in progress] == list(range(1, 26)) and progress[-1].total == 25
    failed = [i for i in items if not i.success]
    assert [i.document_id for i in failed] == ["empty"]
    assert failed[0].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert all(i.data["overall"]["label"] == "SENTIMENT_LABEL_POSITIVE" for i in items if i.success)
    done = stream[-1].done
    assert (done.total_processed, done.total_failed, done.success_rate) == (25, 1, 0.96)
    assert 10 < fake_mesh.nlp.max_in_flight <= 30  # batches of 10, three at once


async def test_batch_rejects_unknown_operations(stub):
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await events(stub.ProcessBatch(pb.ProcessBatchRequest(documents=[pb.BatchDocument(text="x")], operation="x")))
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_tools_list_and_execute(stub):
    listed = await stub.ListTools(pb.ListToolsRequest())
    assert listed.count == 6
    assert {t.name for t in listed.tools} == {"analyze_document_text", "extract_entities", "rag_search",
                                              "vector_search", "knowledge_graph_query", "python_sentiment"}
    local = await stub.ExecuteTool(pb.ExecuteToolRequest(name="analyze_document_text",
                                                         input={"text": "One two three. Four five!"}))
    assert local.success and local.result.struct_value["words"] == 5
    entities = await stub.ExecuteTool(pb.ExecuteToolRequest(name="extract_entities", input={"text": DOC}))
    names = [e["text"] for e in entities.result.struct_value["entities"]]
    assert "Ada Lovelace" in names
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await stub.ExecuteTool(pb.ExecuteToolRequest(name="nope", input={}))
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.aio.AioRpcError) as invalid:
        await stub.ExecuteTool(pb.ExecuteToolRequest(name="rag_search", input={"topK": 3}))
    assert invalid.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_agent_offline_rules_pick_and_run_tools_in_parallel(make_orchestrator):
    orchestrator = make_orchestrator()
    stub = await orchestrator.start(providers="local")
    reply = await stub.RunAgent(pb.RunAgentRequest(
        message="List the entities and the sentiment of: Ada Lovelace had a good day in London."))
    assert [t.name for t in reply.tools_used] == ["extract_entities", "python_sentiment"]
    assert not any(t.is_error for t in reply.tools_used)
    assert reply.provider == "rules" and reply.iterations == 1
    assert "Ada Lovelace" in reply.response and "positive" in reply.response
    assert orchestrator.local.requests == []


async def test_agent_offline_asks_the_local_model_when_no_rule_matches(make_orchestrator):
    orchestrator = make_orchestrator()
    stub = await orchestrator.start(providers="local")
    orchestrator.local.script = [orchestrator.local.tool_call("analyze_document_text", {"text": "Hi there. Bye."})]
    reply = await stub.RunAgent(pb.RunAgentRequest(message="Tell me something about: Hi there. Bye."))
    assert reply.provider == "local" and [t.name for t in reply.tools_used] == ["analyze_document_text"]
    assert "3 words" in reply.response


async def test_agent_with_a_vendor_model_loops_over_tool_results(make_orchestrator):
    orchestrator = make_orchestrator()
    stub = await orchestrator.start()
    openai = orchestrator.openai
    openai.script = [
        openai.tool_call("python_sentiment", {"text": "good"}),
        openai.tool_call("rag_search", {}),  # invalid input: goes back flagged as an error
        openai.text("The text is positive."),
    ]
    reply = await stub.RunAgent(pb.RunAgentRequest(message="How does it feel?", context="A good day."))
    assert reply.response == "The text is positive." and reply.iterations == 3
    assert [(t.name, t.is_error) for t in reply.tools_used] == [("python_sentiment", False), ("rag_search", True)]
    assert reply.tokens_used.input == 300 and reply.provider == "openai"
    tool_results = openai.requests[2].messages[-1].content
    assert tool_results[0].is_error and "query" in tool_results[0].content
    assert "<document_context>" in openai.requests[0].system[1].text
    capped = await stub.RunAgent(pb.RunAgentRequest(message="loop", max_iterations=2))
    assert capped.max_iterations_reached or capped.iterations <= 2


async def test_conversation_rpcs_summarise_at_21_messages(make_orchestrator, fake_mesh):
    stub = await make_orchestrator().start(providers="local")  # offline: the NLP service summarises
    for n in range(20):
        added = await stub.AddConversationMessage(pb.AddConversationMessageRequest(
            user_id="u", document_id="doc", role="user", content=f"Message number {n} is here."))
    assert added.message_count == 20 and not added.has_summary
    added = await stub.AddConversationMessage(pb.AddConversationMessageRequest(
        user_id="u", document_id="doc", role="assistant", content="The twenty-first."))
    assert added.has_summary and added.message_count == 10
    assert added.recent_messages[-1].content == "The twenty-first."
    conversation = await stub.GetConversation(pb.GetConversationRequest(user_id="u", document_id="doc"))
    assert conversation.summary.startswith("- user: Message number 0 is here.")  # the fake NLP's bullets
    assert "Summarize" in fake_mesh.switches["nlp"].calls
    with pytest.raises(grpc.aio.AioRpcError) as invalid:
        await stub.AddConversationMessage(pb.AddConversationMessageRequest(user_id="u", role="bot", content="x"))
    assert invalid.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    cleared = await stub.ClearConversation(pb.ClearConversationRequest(user_id="u", document_id="doc"))
    assert cleared.success


async def test_vendor_model_summarises_conversations_when_configured(make_orchestrator):
    orchestrator = make_orchestrator()
    stub = await orchestrator.start()
    orchestrator.openai.default = "- they said hello 21 times"
    for n in range(21):
        added = await stub.AddConversationMessage(pb.AddConversationMessageRequest(
            user_id="u", role="user", content=f"hello {n}"))
    assert added.has_summary
    conversation = await stub.GetConversation(pb.GetConversationRequest(user_id="u", document_id="general"))
    assert conversation.summary == "- they said hello 21 times"
    assert "user: hello 0" in orchestrator.openai.requests[-1].messages[0].content


async def test_restart_keeps_costs_circuits_dead_letters_and_conversations(make_orchestrator, fake_mesh):
    orchestrator = make_orchestrator()
    stub = await orchestrator.start()
    await events(stub.Process(pb.ProcessRequest(intent="chat.general", message="hello")))
    await stub.AddConversationMessage(pb.AddConversationMessageRequest(user_id="u", role="user", content="hi"))
    fake_mesh.switches["nlp"].down = True
    for _ in range(3):
        await events(stub.Process(pb.ProcessRequest(intent="document.analytics", text="Some words.")))
    fake_mesh.switches["nlp"].down = False
    await orchestrator.stop()
    await asyncio.sleep(0)

    stub = await orchestrator.start()
    costs = await stub.GetCosts(pb.GetCostsRequest())
    assert costs.by_provider["openai"].requests == 1
    circuits = {c.name: c.state for c in (await stub.ListCircuits(pb.ListCircuitsRequest())).circuits}
    assert circuits["service:nlp"] == pb.CIRCUIT_STATE_OPEN
    letters = await stub.ListDeadLetters(pb.ListDeadLettersRequest())
    assert letters.retrying == 3
    conversation = await stub.GetConversation(pb.GetConversationRequest(user_id="u", document_id="general"))
    assert [m.content for m in conversation.messages] == ["hi"]


async def test_chat_compacts_history_and_document_to_fit_a_small_context_window(make_orchestrator, fake_mesh):
    orchestrator = make_orchestrator()
    orchestrator.local.context_window = 4096 + 600  # 600 tokens left once the answer's 4096 are reserved
    stub = await orchestrator.start(providers="local")
    for n in range(8):
        await stub.AddConversationMessage(pb.AddConversationMessageRequest(
            user_id="u", role="user" if n % 2 == 0 else "assistant",
            content=f"Turn {n}: " + "earlier detail " * 20))
    document = "\n\n".join(f"Paragraph {n}. " + "Some content here. " * 20 for n in range(10))
    stream = await events(stub.Process(pb.ProcessRequest(
        intent="chat.document", text=document, message="What is in paragraph 1?", user_id="u")))
    chat = stream[-2].subtask
    assert chat.state == pb.TASK_STATE_SUCCEEDED and chat.data["compacted"]
    request = orchestrator.local.requests[-1]
    prompt_chars = sum(len(b.text) for b in request.system) + sum(len(m.content) for m in request.messages)
    assert prompt_chars <= 600 * 4 + 100  # the estimate, plus the context tags
    kept = [m.content.split(":")[0] for m in request.messages[:-1]]
    assert kept and kept == [f"Turn {n}" for n in range(8 - len(kept), 8)]  # the most recent turns, in order
    system = "".join(b.text for b in request.system)
    assert "<conversation_summary>" in system
    assert "Paragraph 0." in system and "Paragraph 9." not in system  # the document's head, cut to fit
    assert "Summarize" in fake_mesh.switches["nlp"].calls  # older turns summarised by the NLP service
