"""The MCP server's evaluation tools over real stdio, against a real orchestrator (fake downstream services)."""

from __future__ import annotations

import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

CSV = "question,answers\nWho keeps the lamp?,the keeper\nWho won in 1850?,unanswerable\n"


def structured(result) -> dict:
    assert not result.isError, result.content
    return result.structuredContent or json.loads(result.content[0].text)


async def test_upload_run_status_and_compare_through_mcp(make_orchestrator, fake_mesh, tmp_path):
    orchestrator = make_orchestrator()
    await orchestrator.start(providers="local")
    env = {
        "DOCUTHINKER_HOST": "127.0.0.1",
        "DOCUTHINKER_NLP_PORT": str(fake_mesh.ports["nlp"]),
        "DOCUTHINKER_RAG_PORT": str(fake_mesh.ports["rag"]),
        "DOCUTHINKER_GRAPH_PORT": str(fake_mesh.ports["graph"]),
        "DOCUTHINKER_ORCHESTRATOR_PORT": str(orchestrator.running.port),
        "DOCUTHINKER_MCP_TENANT": "mcp-evals",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    (tmp_path / "set.csv").write_text(CSV)
    params = StdioServerParameters(command=sys.executable, args=["-m", "services.orchestrator.mcp.server"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        created = structured(await session.call_tool("eval_set_upload", {"path": str(tmp_path / "set.csv")}))
        assert created["item_count"] == 2 and created["name"] == "set.csv"
        broken = await session.call_tool("eval_set_upload", {"content": "question,answers\nQ?,\n"})
        assert broken.isError and "INVALID_ARGUMENT (MALFORMED_EVAL_SET)" in broken.content[0].text
        assert "row 2" in broken.content[0].text
        first = structured(await session.call_tool("eval_run", {"setId": created["set_id"], "topK": 2}))
        second = structured(await session.call_tool("eval_run", {"setId": created["set_id"], "topK": 5}))
        assert first["state"] == second["state"] == "EVAL_RUN_STATE_SUCCEEDED" and first["completed"] == 2
        status = structured(await session.call_tool("eval_run_status", {"runId": first["run_id"], "items": True}))
        assert len(status["items"]) == 2 and status["totals"]["overall"]["abstention_unanswerable"] == 1.0
        compared = structured(await session.call_tool("eval_runs_compare", {
            "baseRunId": first["run_id"], "candidateRunId": second["run_id"]}))
        assert [d["name"] for d in compared["differences"]] == ["settings.top_k"] and compared["same"] == 2
        listed = structured(await session.call_tool("eval_sets", {}))
        assert [s["set_id"] for s in listed["sets"]] == [created["set_id"]] and len(listed["recent_runs"]) == 2
