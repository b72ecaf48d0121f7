"""The supervisor: classify, check budgets, decompose into a task DAG, dispatch, stream, aggregate.

Everything that can reject a request (unknown intent, missing input, token or money budget)
happens in ``prepare``, before the first event, so a REST caller gets the proper HTTP status
(400, 429) instead of an in-band error. A task that fails transiently after its fallbacks
becomes a dead letter; its subtask event says which.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from services.orchestrator import plans
from services.orchestrator.costs import CostTracker, intent_scope, track_spend
from services.orchestrator.dag import Task, TaskResult, TaskState, aggregate, execute, validate
from services.orchestrator.dlq import DeadLetterQueue
from services.orchestrator.downstream import is_transient
from services.orchestrator.intents import INTENTS, Classification, IntentClassifier, llm_classification_prompt
from services.orchestrator.llm import LanguageModels
from services.orchestrator.operations import Operations, Outcome
from services.orchestrator.tokens import TokenBudget, estimate_tokens
from services.providers.base import GenerationRequest, Message
from services.runtime import request_context
from services.runtime.errors import InvalidArgument

ESTIMATED_OUTPUT_TOKENS = 1024
PREVIEW_CHARS = 500


@dataclass(frozen=True)
class Prepared:
    classification: Classification
    tasks: list[Task]
    request: plans.SupervisorRequest


@dataclass(frozen=True)
class Subtask:
    result: TaskResult
    data: dict[str, Any]
    """The result's data as shown to the caller (long extracted texts previewed)."""


@dataclass(frozen=True)
class Done:
    success: bool
    trace_id: str
    data: dict[str, Any]
    cost_usd: float


class Supervisor:
    def __init__(
        self,
        classifier: IntentClassifier,
        operations: Operations,
        dlq: DeadLetterQueue,
        costs: CostTracker,
        llm: LanguageModels,
        tokens: TokenBudget,
        max_documents: int = 1000,
    ) -> None:
        self._classifier = classifier
        self._operations = operations
        self._dlq = dlq
        self._costs = costs
        self._llm = llm
        self._tokens = tokens
        self._max_documents = max_documents

    async def prepare(self, request: plans.SupervisorRequest) -> Prepared:
        classification = await self._classifier.classify(
            intent=request.intent or ("chat.voice" if request.audio and not request.route else ""),
            route=request.route,
            text=request.message or request.text,
            has_document=bool(request.document_id or request.text and request.message),
        )
        tasks = plans.decompose(classification.intent, request, self._max_documents)
        validate(tasks)
        self.check_budgets(classification.intent, request.message or request.text)
        return Prepared(classification, tasks, request)

    def check_budgets(self, intent: str, content: str) -> None:
        """Token budget of what the orchestrator itself sends, and the money budget of a paid LLM."""
        task = INTENTS[intent].llm_task
        if task is None:
            return
        provider = self._llm.likely_provider(task)
        if intent.startswith("chat.") and provider is not None:
            available = max(0, provider.context_window - self._tokens.reserve_for_output)
            used = estimate_tokens(content)
            if used > available:
                raise InvalidArgument(
                    f"the message needs about {used} tokens; {provider.name} ({provider.model}) allows {available}",
                    reason="TOKEN_BUDGET_EXCEEDED",
                    metadata={"model": provider.model, "used": str(used), "available": str(available)},
                )
        if self._llm.remote_can_serve(task):
            estimate = 0.0
            if provider is not None and provider.name != "local":
                estimate = self._costs.estimate(provider.model, estimate_tokens(content), ESTIMATED_OUTPUT_TOKENS)
            self._costs.check(estimate)

    async def run(self, prepared: Prepared, tenant: str) -> AsyncIterator[Subtask | Done]:
        ctx = request_context.current()
        trace_id = ctx.request_id if ctx else ""
        results: list[TaskResult] = []
        with intent_scope(prepared.classification.intent), track_spend() as spend:
            async def run(operation: str, params: Mapping[str, Any]) -> Outcome:
                return await self._operations.run(operation, params, tenant)

            async for result in execute(prepared.tasks, run, is_transient):
                results.append(result)
                data = _public(result)
                if result.state is TaskState.FAILED and result.error is not None and is_transient(result.error):
                    letter = self._dlq.enqueue(result.task.operation, result.params, str(result.error), tenant)
                    data["dead_letter_id"] = letter.id
                yield Subtask(result, data)
        success, data = aggregate(results)
        data = {"intent": prepared.classification.intent, "results": _previewed(data)}
        yield Done(success, trace_id, data, spend.total)


def _public(result: TaskResult) -> dict[str, Any]:
    return _previewed(dict(result.data))


def _previewed(data: dict[str, Any]) -> dict[str, Any]:
    """Extracted document texts can be megabytes: events carry a preview of them."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "text" and isinstance(value, str) and len(value) > PREVIEW_CHARS:
            out["text_preview"] = value[:PREVIEW_CHARS]
        elif isinstance(value, dict):
            out[key] = _previewed(value)
        else:
            out[key] = value
    return out


def llm_classifier(llm: LanguageModels):
    """The LLM step of classification: only when a vendor model serves the router task "classify"."""

    async def classify(snippet: str) -> dict[str, Any] | None:
        if not llm.remote_can_serve("classify"):
            return None
        system, user, schema = llm_classification_prompt(snippet)
        result = await llm.generate(
            "classify",
            GenerationRequest(messages=[Message("user", user)], system=system, json_schema=schema,
                              temperature=0.0, max_tokens=150),
        )
        return json.loads(result.text)

    return classify
