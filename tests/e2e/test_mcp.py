"""The MCP server (``make mcp``) driven by the official MCP client over stdio, against the real mesh."""

from __future__ import annotations

import json
import sys

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from services.launcher.mesh import ROOT
from services.orchestrator.mcp.evals import EVAL_TOOLS
from services.orchestrator.mcp.server import AI_ML_TOOLS, LIBRARY_TOOLS, ORCHESTRATOR_TOOLS, VOICE_TOOLS

pytestmark = pytest.mark.e2e

TEXT = (
    "Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911. She discovered polonium and "
    "radium in Paris.\n\nHer research on radioactivity founded a new field of science, and the Curie Institute "
    "continues her work on cancer treatment today."
)


def result(reply) -> dict:
    assert not reply.isError, reply.content
    return reply.structuredContent or json.loads(reply.content[0].text)


async def test_mcp_client_lists_all_22_tools_and_calls_them_end_to_end(mesh):
    env = {k: v for k, v in mesh.env.items() if k.startswith(("DOCUTHINKER_", "HF_", "TRANSFORMERS_"))}
    env["DOCUTHINKER_MCP_TENANT"] = "mcp-e2e"  # its documents and graph stay out of other suites' way
    params = StdioServerParameters(command=sys.executable, args=["-m", "services.orchestrator.mcp.server"],
                                   env=env, cwd=str(ROOT))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        assert len(tools) == 22 + len(EVAL_TOOLS)
        assert {t.name for t in tools} == (set(ORCHESTRATOR_TOOLS) | set(AI_ML_TOOLS) | set(VOICE_TOOLS)
                                           | set(LIBRARY_TOOLS) | set(EVAL_TOOLS))
        rewrite = next(t for t in tools if t.name == "document_rewrite")
        assert set(rewrite.inputSchema["required"]) == {"style"}  # and text or a stored documentId
        assert all(spec.get("description") for t in tools for spec in t.inputSchema.get("properties", {}).values())

        summary = result(await session.call_tool("document_summarize", {"text": TEXT}))
        assert "Curie" in summary["summary"]
        analytics = result(await session.call_tool("document_analytics", {"text": TEXT}))
        assert analytics["words"] > 40 and analytics["sentences"] == 3
        topics = result(await session.call_tool("quick_topics", {"document": TEXT}))
        assert topics["topics"]

        stored = result(await session.call_tool("vector_upsert", {"document": TEXT, "doc_id": "curie"}))
        document_id = stored["document"]["document_id"]
        assert stored["document"]["filename"] == "curie.txt"
        # The library, then a stored document summarised by its name (no text pasted into the call).
        library = result(await session.call_tool("list_documents", {"query": "curie"}))
        assert [d["document_id"] for d in library["documents"]] == [document_id]
        assert library["documents"][0]["status"] == "ready" and library["documents"][0]["chunks"] >= 1
        by_name = result(await session.call_tool("document_summarize", {"documentId": "curie.txt"}))
        assert by_name["document_id"] == document_id and "Curie" in by_name["summary"]
        by_prefix = result(await session.call_tool("document_key_ideas", {"documentId": document_id[:8]}))
        assert by_prefix["document_id"] == document_id and by_prefix["ideas"]
        hits = result(await session.call_tool("vector_search", {"query": "who discovered radium", "n_results": 3}))
        assert hits["results"][0]["provenance"]["document_id"] == document_id
        # A question its sentence answers by itself ("She discovered polonium", after a sentence naming her, is the
        # coreference miss of tests/rag/answers/test_reader_rpc.py).
        answer = result(await session.call_tool("rag_query", {"query": "When did Marie Curie win the Nobel Prize in "
                                                                        "Physics?"}))
        assert "1903" in answer["answer"]
        assert answer["citations"][0]["document_id"] == document_id

        upserted = result(await session.call_tool("graph_upsert", {"document": TEXT, "metadata": {"doc_id": "curie-g",
                                                                                                    "title": "Curie"}}))
        assert upserted["document_id"] == "curie-g" and upserted["entities"] > 0
        rows = result(await session.call_tool("graph_query", {
            "query": "MATCH (d:Document {id: $id})-[:MENTIONS]->(e:Entity) RETURN e.name AS name",
            "params": {"id": "curie-g"}}))
        assert any("Curie" in row["name"] for row in rows["rows"])
        lookup = result(await session.call_tool("knowledge_graph_query", {"query": "documents mentioning Curie"}))
        assert lookup["translated"] and any(row["document_id"] == "curie-g" for row in lookup["rows"])

        health = result(await session.call_tool("system_health", {}))
        assert health["status"] == "SERVING"
        costs = result(await session.call_tool("system_costs", {"period": "month"}))
        assert costs["period"] == "month" and costs["daily_budget"] == 10.0

        refused = await session.call_tool("graph_query", {"query": "MATCH (n) DETACH DELETE n"})
        assert refused.isError and "INVALID_ARGUMENT" in refused.content[0].text
