"""MCP over real stdio: our server driven by the SDK's client, and our client driving an external server."""

from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from docuthinker.orchestrator.v1 import orchestrator_service_pb2 as pb
from services.orchestrator.mcp.client import McpHub, McpToolError, tool_name
from services.orchestrator.mcp.evals import EVAL_TOOLS
from services.orchestrator.mcp.server import AI_ML_TOOLS, LIBRARY_TOOLS, ORCHESTRATOR_TOOLS, VOICE_TOOLS
from services.orchestrator.settings import McpServerConfig, parse_mcp_servers
from services.orchestrator.tools import ToolRegistry
from services.runtime.errors import InvalidArgument

CALCULATOR = textwrap.dedent(
    '''
    from mcp.server.fastmcp import FastMCP

    server = FastMCP("calc")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Adds two integers."""
        return a + b

    @server.tool()
    def explode(reason: str) -> str:
        """Always fails."""
        raise ValueError(reason)

    server.run("stdio")
    '''
)


@pytest.fixture
def calculator(tmp_path) -> McpServerConfig:
    script = tmp_path / "calc_server.py"
    script.write_text(CALCULATOR)
    return McpServerConfig(name="calc", command=sys.executable, args=(str(script),))


def structured(result) -> dict:
    assert not result.isError, result.content
    return result.structuredContent or json.loads(result.content[0].text)


async def test_our_server_lists_22_tools_and_calls_the_mesh(make_orchestrator, fake_mesh):
    orchestrator = make_orchestrator()
    await orchestrator.start(providers="local")
    orchestrator.local.default = "The engine was designed by Babbage."
    env = {
        "DOCUTHINKER_HOST": "127.0.0.1",
        "DOCUTHINKER_NLP_PORT": str(fake_mesh.ports["nlp"]),
        "DOCUTHINKER_RAG_PORT": str(fake_mesh.ports["rag"]),
        "DOCUTHINKER_GRAPH_PORT": str(fake_mesh.ports["graph"]),
        "DOCUTHINKER_ORCHESTRATOR_PORT": str(orchestrator.running.port),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "services.orchestrator.mcp.server"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        assert sorted(t.name for t in tools) == sorted(ORCHESTRATOR_TOOLS + AI_ML_TOOLS + VOICE_TOOLS + LIBRARY_TOOLS
                                                       + EVAL_TOOLS)
        assert len(tools) == 22 + len(EVAL_TOOLS)
        undescribed = [(t.name, name) for t in tools for name, spec in t.inputSchema.get("properties", {}).items()
                       if not spec.get("description")]
        assert undescribed == []

        harbour = fake_mesh.rag.add("The harbour office manages moorings. Fees rose by four percent.", "harbour.txt")
        fake_mesh.rag.add("Lighthouse keepers inspect the lamp.", "lighthouse.txt")
        listed = structured(await session.call_tool("list_documents", {}))
        assert listed["count"] == 2 and {d["filename"] for d in listed["documents"]} == {"harbour.txt", "lighthouse.txt"}
        only = structured(await session.call_tool("list_documents", {"query": "HARBOUR"}))
        assert [d["document_id"] for d in only["documents"]] == [harbour]
        for reference in (harbour, harbour[:6], "harbour.txt", "harbour"):
            stored = structured(await session.call_tool("document_summarize", {"documentId": reference}))
            assert (stored["document_id"], stored["summary"]) == (harbour, "The harbour office manages moorings.")
        ambiguous = await session.call_tool("document_key_ideas", {"documentId": ".txt"})
        assert ambiguous.isError and "AMBIGUOUS_DOCUMENT" in ambiguous.content[0].text
        missing = await session.call_tool("document_key_ideas", {"documentId": "nothing-like-it"})
        assert missing.isError and "DOCUMENT_NOT_FOUND" in missing.content[0].text
        both = await session.call_tool("document_sentiment", {"text": "Fine.", "documentId": harbour})
        assert both.isError and "ONE_SOURCE" in both.content[0].text

        summary = structured(await session.call_tool("document_summarize", {"text": "First one. Second one."}))
        assert summary["summary"] == "First one."
        rewrite = structured(await session.call_tool("document_rewrite", {"text": "hey", "style": "formal"}))
        assert rewrite["rewritten"] == "[formal] hey"
        chat = structured(await session.call_tool("document_chat", {"message": "Who?", "documentText": "Babbage."}))
        assert chat["response"] == "The engine was designed by Babbage." and chat["provider"] == "local"
        health = structured(await session.call_tool("system_health", {}))
        assert {s["name"] for s in health["services"]} == {"orchestrator", "rag", "nlp", "graph"}
        costs = structured(await session.call_tool("system_costs", {"period": "week"}))
        assert costs["period"] == "week"
        stored = structured(await session.call_tool("vector_upsert", {"document": "Qubits hold states.",
                                                                      "doc_id": "q1"}))
        assert stored["document"]["filename"] == "q1.txt"
        found = structured(await session.call_tool("semantic_document_search",
                                                   {"document": "Qubits hold states.", "query": "qubits"}))
        assert found["results"][0]["text"] == "Qubits hold states."
        graph = structured(await session.call_tool("knowledge_graph_query", {"query": "documents about Qubits"}))
        assert graph["translated"] and graph["phrase"] == "Qubits"
        failed = await session.call_tool("document_sentiment", {"text": "   "})
        assert failed.isError and "INVALID_ARGUMENT" in failed.content[0].text


async def test_client_offers_an_external_servers_tools(calculator):
    registry = ToolRegistry()
    hub = McpHub([calculator, McpServerConfig(name="broken", command="/nonexistent/server")], registry, 30)
    await hub.start()
    try:
        status = {s.name: s for s in hub.status()}
        assert status["calc"].connected and set(status["calc"].tools) == {"add", "explode"}
        assert not status["broken"].connected and status["broken"].error
        definitions = {d.name: d for d in registry.definitions()}
        assert set(definitions) == {"mcp__calc__add", "mcp__calc__explode"}
        assert definitions["mcp__calc__add"].source == "mcp:calc"
        assert await registry.execute("mcp__calc__add", {"a": 2, "b": 40}, "acme") == {"result": 42}
        with pytest.raises(McpToolError, match="kaboom"):
            await registry.execute("mcp__calc__explode", {"reason": "kaboom"}, "acme")
        with pytest.raises(InvalidArgument):
            await registry.execute("mcp__calc__add", {"a": "two"}, "acme")
    finally:
        await hub.stop()
    assert registry.definitions() == []


async def test_orchestrator_agent_uses_configured_mcp_servers(make_orchestrator, calculator):
    servers = json.dumps([{"name": calculator.name, "command": calculator.command, "args": list(calculator.args)}])
    assert parse_mcp_servers(servers) == (calculator,)
    orchestrator = make_orchestrator(mcp_servers=servers)
    stub = await orchestrator.start()
    listed = await stub.ListTools(pb.ListToolsRequest())
    sources = {t.name: t.source for t in listed.tools}
    assert sources["mcp__calc__add"] == "mcp:calc" and listed.count == 8
    executed = await stub.ExecuteTool(pb.ExecuteToolRequest(name="mcp__calc__add", input={"a": 1, "b": 2}))
    assert executed.result.struct_value["result"] == 3
    openai = orchestrator.openai
    openai.script = [openai.tool_call("mcp__calc__add", {"a": 20, "b": 22}), openai.text("It is 42.")]
    reply = await stub.RunAgent(pb.RunAgentRequest(message="What is 20 + 22?"))
    assert reply.response == "It is 42."
    assert [(t.name, t.is_error, t.output) for t in reply.tools_used] == [("mcp__calc__add", False, '{"result": 42}')]


def test_tool_names_are_safe_for_vendor_apis():
    assert tool_name("my server", "do:thing/x") == "mcp__my_server__do_thing_x"
    assert len(tool_name("s" * 50, "t" * 50)) == 64
