"""The MCP server's evaluation tools: upload a set, run it, follow it, compare two runs, read the results."""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from google.api import httpbody_pb2
from pydantic import Field

from docuthinker.orchestrator.v1 import evaluation_pb2 as epb
from services.orchestrator.mcp.mesh import MeshGateway
from services.runtime.errors import InvalidArgument

EVAL_TOOLS = ("eval_set_upload", "eval_sets", "eval_run", "eval_run_status", "eval_runs_compare")
Register = Callable[[Callable[..., Awaitable[Any]]], Any]


def register(tool: Register, mesh: MeshGateway) -> None:
    """Adds the evaluation tools through the server's ``tool`` decorator (errors reported as the others')."""

    @tool
    async def eval_set_upload(
        path: Annotated[str, Field(description="A local CSV or JSON file of questions (or give content)")] = "",
        content: Annotated[str, Field(description="The set's text, CSV or JSON (or give path)")] = "",
        name: Annotated[str, Field(description="A name for the set (default: the file's name)")] = "",
        format: Annotated[str, Field(description='"csv" or "json" (default: from the file name or the text)')] = "",
    ) -> dict[str, Any]:
        """Upload an evaluation set (questions with accepted answers, CSV or JSON, see docs/evaluation.md): give a
        local file path or the file's text. A malformed set is refused with its row numbers."""
        if bool(path) == bool(content):
            raise InvalidArgument("give exactly one of path (a local CSV or JSON file) or content (its text)")
        data = pathlib.Path(path).expanduser().read_bytes() if path else content.encode("utf-8")
        filename = pathlib.Path(path).name if path else ""
        request = epb.CreateEvalSetRequest(name=name, filename=filename, format=format,
                                           file=httpbody_pb2.HttpBody(data=data))
        return (await mesh.orchestrator_call("CreateEvalSet", request))["eval_set"]

    @tool
    async def eval_sets() -> dict[str, Any]:
        """The evaluation sets kept for this tenant, and its recent runs with their figures."""
        sets = await mesh.orchestrator_call("ListEvalSets", epb.ListEvalSetsRequest(page_size=200))
        runs = await mesh.orchestrator_call("ListEvalRuns", epb.ListEvalRunsRequest(page_size=20))
        return {"sets": sets.get("eval_sets", []), "recent_runs": runs.get("runs", [])}

    @tool
    async def eval_run(
        setId: Annotated[str, Field(description="The evaluation set to run (eval_sets lists them)")],
        documentIds: Annotated[list[str] | None, Field(description="Only these documents (default: the library)")] = None,
        topK: Annotated[int, Field(description="Chunks of evidence per question (0: the engine's default)")] = 0,
        agent: Annotated[bool, Field(description="Ask through the agent graph instead of the answer engine")] = False,
        label: Annotated[str, Field(description="A label to recognise the run by")] = "",
        wait: Annotated[bool, Field(description="Return only when the run ends (or waitSeconds pass)")] = True,
        waitSeconds: Annotated[float, Field(description="Longest wait, in seconds")] = 600,
    ) -> dict[str, Any]:
        """Run an evaluation set against the library (or documentIds): correct / cited / refused per question and
        totals per kind and tag. With wait, returns when it ends (or after waitSeconds, still running)."""
        mode = epb.EVAL_MODE_AGENT if agent else epb.EVAL_MODE_ANSWER
        run = (await mesh.orchestrator_call("StartEvalRun", epb.StartEvalRunRequest(
            set_id=setId, document_ids=documentIds or [], top_k=topK, mode=mode, label=label)))["run"]
        deadline = asyncio.get_running_loop().time() + waitSeconds
        while wait and run.get("state") == "EVAL_RUN_STATE_RUNNING" \
                and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(1.0)
            run = (await mesh.orchestrator_call("GetEvalRun", epb.GetEvalRunRequest(run_id=run["run_id"])))["run"]
        return run

    @tool
    async def eval_run_status(
        runId: Annotated[str, Field(description="The run to read")],
        items: Annotated[bool, Field(description="Include every question's answer and score")] = False,
        cancel: Annotated[bool, Field(description="Cancel the run first (the questions done are kept)")] = False,
    ) -> dict[str, Any]:
        """A run's progress and figures (items: every question's answer and score; cancel: stop it first)."""
        if cancel:
            await mesh.orchestrator_call("CancelEvalRun", epb.CancelEvalRunRequest(run_id=runId))
        run = (await mesh.orchestrator_call("GetEvalRun", epb.GetEvalRunRequest(run_id=runId)))["run"]
        if items:
            listed = await mesh.orchestrator_call("ListEvalRunItems",
                                                  epb.ListEvalRunItemsRequest(run_id=runId, page_size=1000))
            run["items"] = listed.get("items", [])
        return run

    @tool
    async def eval_runs_compare(
        baseRunId: Annotated[str, Field(description="The run compared against")],
        candidateRunId: Annotated[str, Field(description="The run compared")],
    ) -> dict[str, Any]:
        """Two runs side by side: the settings and models that differ, the figures' deltas, and each question
        that got better or worse."""
        return await mesh.orchestrator_call("CompareEvalRuns", epb.CompareEvalRunsRequest(
            base_run_id=baseRunId, candidate_run_id=candidateRunId))
