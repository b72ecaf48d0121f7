"""The agent tool-use loop.

With a vendor model (router task "agent"): the model sees every registered tool; the tools it
asks for run in parallel; their results go back as ``tool_result`` blocks (``is_error`` set on
failure); this repeats until the model answers without tools or the iteration cap is hit.

Offline, the local model is too weak to drive tools, so the deterministic planner in
``tool_planner`` decides; only when no rule matches is the local model asked to choose
(router task "agent_tool_choice", grammar-constrained). The answer is then composed from
the tool results. ``decided_by`` says which of the three made the choice.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from services.orchestrator.answer_text import compose_answer
from services.orchestrator.costs import intent_scope
from services.orchestrator.llm import LanguageModels
from services.orchestrator.tool_planner import PlannedCall, plan_tools
from services.orchestrator.tools import ToolRegistry
from services.providers.base import (
    GenerationRequest,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

AGENT_TASK = "agent"
TOOL_CHOICE_TASK = "agent_tool_choice"
MAX_TOOL_OUTPUT_CHARS = 20_000
MAX_ITERATIONS_CAP = 50
DEFAULT_SYSTEM = (
    "You are DocuThinker's document agent. Use the tools to look things up in the user's documents, the"
    " knowledge graph and the text analysers; cite what the tools returned; say so when they found nothing."
)


@dataclass(frozen=True)
class ToolCallRecord:
    name: str
    input: dict[str, Any]
    is_error: bool
    output: str
    result: Any = None


@dataclass(frozen=True)
class AgentRun:
    response: str
    iterations: int
    tools_used: list[ToolCallRecord]
    usage: Usage
    provider: str
    model: str
    max_iterations_reached: bool
    decided_by: str
    """model (a vendor model drove the loop), rules (the offline planner) or local-model."""
    rules: list[str] = field(default_factory=list)


class AgentLoop:
    def __init__(self, registry: ToolRegistry, llm: LanguageModels, max_iterations: int = 10) -> None:
        self._registry = registry
        self._llm = llm
        self.max_iterations = max_iterations

    async def run(
        self,
        message: str,
        *,
        tenant: str,
        system_prompt: str = "",
        context: str = "",
        provider: str = "",
        max_iterations: int = 0,
    ) -> AgentRun:
        cap = min(max_iterations or self.max_iterations, MAX_ITERATIONS_CAP)
        with intent_scope("agent"):
            if provider != "local" and (provider or self._llm.remote_can_serve(AGENT_TASK)):
                return await self._model_loop(message, system_prompt, context, provider, cap, tenant)
            return await self._offline(message, context, tenant)

    # -- with a vendor model --------------------------------------------------------------
    async def _model_loop(self, message: str, system_prompt: str, context: str, provider: str, cap: int,
                          tenant: str) -> AgentRun:
        system = [TextBlock(system_prompt or DEFAULT_SYSTEM)]
        if context:
            system.append(TextBlock(f"<document_context>\n{context}\n</document_context>", cacheable=True))
        messages: list[Message] = [Message("user", message)]
        usage = Usage()
        used: list[ToolCallRecord] = []
        last_text, served_by, model = "", "", ""
        for iteration in range(1, cap + 1):
            result = await self._llm.generate(
                AGENT_TASK,
                GenerationRequest(messages=messages, system=system, tools=self._registry.specs(), max_tokens=4096),
                provider or None,
            )
            usage = usage + result.usage
            served_by, model, last_text = result.provider, result.model, result.text
            calls = result.tool_calls
            if not calls:
                return AgentRun(last_text, iteration, used, usage, served_by, model, False, "model")
            messages.append(Message("assistant", list(result.content)))
            records = await asyncio.gather(*(self._call(c.name, c.input, tenant) for c in calls))
            used.extend(records)
            messages.append(Message("user", [
                ToolResultBlock(call.id, record.output, record.is_error) for call, record in zip(calls, records, strict=True)
            ]))
        response = last_text or f"Stopped after {cap} iterations without a final answer."
        return AgentRun(response, cap, used, usage, served_by, model, True, "model")

    # -- offline ----------------------------------------------------------------------------
    async def _offline(self, message: str, context: str, tenant: str) -> AgentRun:
        available = {d.name for d in self._registry.definitions()}
        planned = plan_tools(message, context, available)
        decided_by = "rules"
        usage = Usage()
        provider, model, iterations = "rules", "docuthinker-tool-rules", 1
        if not planned:
            choice = await self._local_choice(message, context)
            if isinstance(choice, str):
                return AgentRun(choice, 1, [], Usage(), "local", "SmolLM2-135M-Instruct", False, "local-model")
            planned, usage, provider, model = choice
            decided_by, iterations = "local-model", 2
        records = list(await asyncio.gather(*(self._call(p.tool, p.input, tenant) for p in planned)))
        response = compose_answer(records)
        return AgentRun(response, iterations, records, usage, provider, model, False, decided_by,
                        [p.rule for p in planned if p.rule])

    async def _local_choice(self, message: str, context: str) -> str | tuple[list[PlannedCall], Usage, str, str]:
        if not self._llm.can_serve(TOOL_CHOICE_TASK):
            return ("No tool matched the request and no model is available to choose one. Ask about entities,"
                    " sentiment, statistics, a search of your documents or the knowledge graph.")
        prompt = message if not context else f"{message}\n\n<document_context>\n{context[:4000]}\n</document_context>"
        result = await self._llm.generate(
            TOOL_CHOICE_TASK,
            GenerationRequest(messages=[Message("user", prompt)], system=DEFAULT_SYSTEM,
                              tools=self._registry.specs(), max_tokens=256, temperature=0.0),
        )
        calls = [b for b in result.content if isinstance(b, ToolUseBlock)]
        if not calls:
            return result.text.strip() or "I could not find a tool for this request."
        planned = [PlannedCall(c.name, dict(c.input), "chosen by the local model") for c in calls]
        return planned, result.usage, result.provider, result.model

    async def _call(self, name: str, tool_input: Mapping[str, Any], tenant: str) -> ToolCallRecord:
        try:
            result = await self._registry.execute(name, tool_input, tenant)
        except Exception as exc:  # noqa: BLE001 - the model sees the failure and may recover
            return ToolCallRecord(name, dict(tool_input), True, f"{type(exc).__name__}: {exc}")
        return ToolCallRecord(name, dict(tool_input), False, _as_text(result), result)


def _as_text(result: Any) -> str:
    text = result if isinstance(result, str) else json.dumps(result, default=str, ensure_ascii=False)
    return text[:MAX_TOOL_OUTPUT_CHARS]

