"""gRPC transport of the orchestrator: maps protobuf to domain calls, nothing more."""

from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf import json_format, timestamp_pb2

from docuthinker.orchestrator.v1 import orchestrator_service_pb2 as pb
from docuthinker.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc
from services.orchestrator import plans
from services.orchestrator.agent_loop import AgentLoop
from services.orchestrator.batch import BatchItem, BatchProcessor, ItemResult, Progress
from services.orchestrator.circuit_breaker import CircuitBreakers, CircuitState
from services.orchestrator.conversation_answers import ConversationAnswers
from services.orchestrator.conversation_rpcs import ConversationRpcs
from services.orchestrator.conversations import Conversation, ConversationStore
from services.orchestrator.costs import CostTracker
from services.orchestrator.dag import TaskState
from services.orchestrator.dlq import DeadLetter, DeadLetterQueue
from services.orchestrator.evals.evaluations import Evaluations
from services.orchestrator.evals.rpcs import EvaluationRpcs
from services.orchestrator.health import HealthProbe, embedding_model_health
from services.orchestrator.model_server_rpcs import ModelServerRpcs
from services.orchestrator.supervisor import Done, Subtask, Supervisor
from services.orchestrator.tokens import TokenBudget, Turn
from services.orchestrator.tools import ToolRegistry
from services.orchestrator.user_conversations import UserConversations, owner
from services.orchestrator.wire import struct, timestamp, to_dict, value
from services.providers.model_server import ModelServerFile
from services.providers.settings import ProviderSettings
from services.runtime.errors import FieldViolation, InvalidArgument, PermissionDenied, status_from_exception
from services.runtime.request_context import (
    TENANT_PATTERN,
    caller_is_admin,
    current_subject,
    current_tenant,
    visible_tenant,
)

_TASK_STATES = {
    TaskState.SUCCEEDED: pb.TASK_STATE_SUCCEEDED,
    TaskState.FAILED: pb.TASK_STATE_FAILED,
    TaskState.SKIPPED: pb.TASK_STATE_SKIPPED,
}
_CIRCUIT_STATES = {
    CircuitState.CLOSED: pb.CIRCUIT_STATE_CLOSED,
    CircuitState.OPEN: pb.CIRCUIT_STATE_OPEN,
    CircuitState.HALF_OPEN: pb.CIRCUIT_STATE_HALF_OPEN,
}
DEFAULT_DLQ_LIMIT = 20
MAX_DLQ_LIMIT = 1000
RECENT_MESSAGES = 10


@dataclass(frozen=True)
class Components:
    """Everything the transport talks to (built by ``service.py``)."""

    health: HealthProbe
    supervisor: Supervisor
    agent: AgentLoop
    batch: BatchProcessor
    tools: ToolRegistry
    tokens: TokenBudget
    costs: CostTracker
    circuits: CircuitBreakers
    dlq: DeadLetterQueue
    conversations: ConversationStore
    evaluations: Evaluations
    user_conversations: UserConversations
    conversation_answers: ConversationAnswers
    model_servers: ModelServerFile | None = None
    providers: ProviderSettings = field(default_factory=ProviderSettings)


def _letter(letter: DeadLetter) -> pb.DeadLetter:
    return pb.DeadLetter(
        id=letter.id,
        operation=letter.operation,
        payload=struct(letter.payload),
        last_error=letter.last_error,
        retry_count=letter.retry_count,
        state=letter.state,
        create_time=timestamp(letter.created_at),
        next_retry_time=timestamp(letter.next_retry_at),
    )


def _message(role: str, content: str, created_at: float) -> pb.ChatMessage:
    return pb.ChatMessage(role=role, content=content, create_time=timestamp(created_at))


def _messages(conversation: Conversation, last: int | None = None) -> list[pb.ChatMessage]:
    chosen = conversation.messages if last is None else conversation.messages[-last:]
    return [_message(m.role, m.content, m.created_at) for m in chosen]


def own_user(user_id: str) -> str:
    """The conversation owner a request may name: with a caller's subject (every call through the gateway),
    only that subject ("" and "me" mean it); another user's is PERMISSION_DENIED, for an admin too (admins read
    others' through the admin calls). A call inside the mesh without a subject (a service) names anyone."""
    subject = current_subject()
    if not subject:
        return user_id
    subject = owner(subject)
    if user_id in ("", "me", subject):
        return subject
    raise PermissionDenied("a conversation's user_id must be your own (the token's subject) or 'me'",
                           reason="NOT_YOUR_CONVERSATION", metadata={"user_id": user_id})


class OrchestratorServicer(EvaluationRpcs, ConversationRpcs, ModelServerRpcs, pb_grpc.OrchestratorServiceServicer):
    def __init__(self, components: Components) -> None:
        self._c = components
        self._evaluations = components.evaluations
        self._conversations = components.user_conversations
        self._answers = components.conversation_answers
        self._model_servers = components.model_servers
        self._providers = components.providers

    # -- supervisor ------------------------------------------------------------------------
    async def Process(self, request: pb.ProcessRequest, context):
        prepared = await self._c.supervisor.prepare(
            plans.SupervisorRequest(
                intent=request.intent,
                route=request.route,
                text=request.text,
                document_id=request.document_id,
                message=request.message,
                document_ids=tuple(request.document_ids),
                options=to_dict(request.options),
                user_id=own_user(request.user_id) if request.user_id else "",
                audio=request.audio,
            )
        )
        c = prepared.classification
        yield pb.ProcessResponse(
            classification=pb.Classification(
                intent=c.intent, confidence=c.confidence, source=c.source, reasoning=c.reasoning
            )
        )
        async for event in self._c.supervisor.run(prepared, current_tenant()):
            if isinstance(event, Subtask):
                r = event.result
                yield pb.ProcessResponse(
                    subtask=pb.SubtaskResult(
                        task_id=r.task.id,
                        operation=r.operation,
                        depends_on=list(r.task.depends_on),
                        state=_TASK_STATES[r.state],
                        data=struct(event.data),
                        error=status_from_exception(r.error) if r.error is not None else None,
                        provider=r.provider,
                        attempts=r.attempts,
                        duration_ms=r.duration_ms,
                    )
                )
            elif isinstance(event, Done):
                yield pb.ProcessResponse(
                    done=pb.ProcessAggregate(
                        success=event.success, trace_id=event.trace_id, data=struct(event.data),
                        cost_usd=event.cost_usd,
                    )
                )

    async def ProcessBatch(self, request: pb.ProcessBatchRequest, context):
        items = [BatchItem(d.id, d.text, d.document_id) for d in request.documents]
        self._c.batch.validate(items, request.operation)
        async for event in self._c.batch.run(items, request.operation, current_tenant()):
            if isinstance(event, ItemResult):
                yield pb.ProcessBatchResponse(
                    item=pb.BatchItemResult(
                        document_id=event.document_id,
                        success=event.success,
                        data=struct(event.data),
                        error=status_from_exception(event.error) if event.error is not None else None,
                    )
                )
            elif isinstance(event, Progress):
                yield pb.ProcessBatchResponse(progress=pb.BatchProgress(completed=event.completed, total=event.total))
            else:
                yield pb.ProcessBatchResponse(
                    done=pb.BatchSummary(
                        total_processed=event.total_processed,
                        total_failed=event.total_failed,
                        success_rate=event.success_rate,
                    )
                )

    # -- agent and tools ---------------------------------------------------------------------
    async def RunAgent(self, request: pb.RunAgentRequest, context) -> pb.RunAgentResponse:
        if not request.message.strip():
            raise InvalidArgument("message is required", reason="MISSING_MESSAGE",
                                  violations=[FieldViolation("message", "what the agent should do")])
        if request.max_iterations < 0:
            raise InvalidArgument("max_iterations must not be negative", reason="BAD_MAX_ITERATIONS",
                                  violations=[FieldViolation("max_iterations", "0 (default) or more")])
        run = await self._c.agent.run(
            request.message,
            tenant=current_tenant(),
            system_prompt=request.system_prompt,
            context=request.context,
            provider=request.provider,
            max_iterations=request.max_iterations,
        )
        return pb.RunAgentResponse(
            response=run.response,
            iterations=run.iterations,
            tools_used=[
                pb.ToolCall(name=t.name, input=struct(t.input), is_error=t.is_error, output=t.output)
                for t in run.tools_used
            ],
            tokens_used=pb.TokenUsage(
                input=run.usage.input_tokens,
                output=run.usage.output_tokens,
                cache_read=run.usage.cache_read_tokens,
                cache_creation=run.usage.cache_write_tokens,
            ),
            provider=run.provider,
            model=run.model,
            max_iterations_reached=run.max_iterations_reached,
        )

    async def ListTools(self, request: pb.ListToolsRequest, context) -> pb.ListToolsResponse:
        tools = [
            pb.Tool(name=d.name, description=d.description, input_schema=struct(d.input_schema), source=d.source)
            for d in self._c.tools.definitions()
        ]
        return pb.ListToolsResponse(tools=tools, count=len(tools))

    async def ExecuteTool(self, request: pb.ExecuteToolRequest, context) -> pb.ExecuteToolResponse:
        result = await self._c.tools.execute(request.name, to_dict(request.input), current_tenant())
        return pb.ExecuteToolResponse(success=True, result=value(result))

    # -- budgets and resilience --------------------------------------------------------------
    async def CheckTokens(self, request: pb.CheckTokensRequest, context) -> pb.CheckTokensResponse:
        check = self._c.tokens.check(
            request.model,
            request.system_prompt,
            [Turn(m.role, m.content) for m in request.messages],
            [json_format.MessageToDict(t, preserving_proto_field_name=True) for t in request.tools],
        )
        return pb.CheckTokensResponse(
            allowed=check.allowed,
            used=check.used,
            available=check.available,
            context_window=check.context_window,
            utilization=check.utilization,
            overflow=check.overflow,
            recommendation=check.recommendation,
        )

    async def GetCosts(self, request: pb.GetCostsRequest, context) -> pb.GetCostsResponse:
        report = self._c.costs.report(request.period, scope=_scope(request.tenant, "costs"))
        return pb.GetCostsResponse(
            period=report.period,
            by_provider={k: pb.CostBucket(cost=b.cost, requests=b.requests) for k, b in report.by_provider.items()},
            by_intent={k: pb.CostBucket(cost=b.cost, requests=b.requests) for k, b in report.by_intent.items()},
            total_cost=report.total_cost,
            total_requests=report.total_requests,
            daily_budget=report.budget.daily_budget,
            monthly_budget=report.budget.monthly_budget,
            daily_spent=report.budget.daily_spent,
            monthly_spent=report.budget.monthly_spent,
            warning=report.budget.warning,
            tenant=report.budget.tenant.tenant,
            tenant_daily_spent=report.budget.tenant.daily_spent,
            tenant_monthly_spent=report.budget.tenant.monthly_spent,
            tenant_daily_budget=report.budget.tenant.daily_budget,
            tenant_monthly_budget=report.budget.tenant.monthly_budget,
            tenant_total_cost=report.tenant_total.cost,
            tenant_total_requests=report.tenant_total.requests,
        )

    async def ListCircuits(self, request: pb.ListCircuitsRequest, context) -> pb.ListCircuitsResponse:
        return pb.ListCircuitsResponse(
            circuits=[
                pb.Circuit(
                    name=c.name,
                    state=_CIRCUIT_STATES[c.state],
                    failures=c.failures,
                    successes=c.successes,
                    total_failures=c.total_failures,
                    opened_time=timestamp(c.opened_at),
                )
                for c in self._c.circuits.all()
            ]
        )

    async def ListDeadLetters(self, request: pb.ListDeadLettersRequest, context) -> pb.ListDeadLettersResponse:
        if request.limit < 0:
            raise InvalidArgument("limit must not be negative", reason="BAD_LIMIT",
                                  violations=[FieldViolation("limit", "0 (default 20) to 1000")])
        limit = min(request.limit or DEFAULT_DLQ_LIMIT, MAX_DLQ_LIMIT)
        letters, counts = self._c.dlq.list(limit, _scope(request.tenant, "dead letters"))
        return pb.ListDeadLettersResponse(
            messages=[_letter(letter) for letter in letters],
            parked=counts.parked,
            retrying=counts.retrying,
            replayed=counts.replayed,
        )

    async def ReplayDeadLetter(self, request: pb.ReplayDeadLetterRequest, context) -> pb.ReplayDeadLetterResponse:
        letter, success = await self._c.dlq.replay(request.id, visible_tenant())
        return pb.ReplayDeadLetterResponse(message=_letter(letter), success=success)

    # -- conversations -----------------------------------------------------------------------
    async def AddConversationMessage(
        self, request: pb.AddConversationMessageRequest, context
    ) -> pb.AddConversationMessageResponse:
        conversation = await self._c.conversations.add_from_client(
            current_tenant(), own_user(request.user_id), request.document_id, request.role, request.content
        )
        return pb.AddConversationMessageResponse(
            message_count=len(conversation.messages),
            has_summary=conversation.has_summary,
            recent_messages=_messages(conversation, RECENT_MESSAGES),
        )

    async def GetConversation(self, request: pb.GetConversationRequest, context) -> pb.GetConversationResponse:
        conversation = self._c.conversations.get(current_tenant(), own_user(request.user_id), request.document_id)
        return pb.GetConversationResponse(
            message_count=len(conversation.messages),
            messages=_messages(conversation),
            has_summary=conversation.has_summary,
            summary=conversation.summary,
        )

    async def ClearConversation(self, request: pb.ClearConversationRequest, context) -> pb.ClearConversationResponse:
        return pb.ClearConversationResponse(
            success=self._c.conversations.clear(current_tenant(), own_user(request.user_id), request.document_id)
        )

    # -- health ------------------------------------------------------------------------------
    async def GetHealth(self, request: pb.GetHealthRequest, context) -> pb.GetHealthResponse:
        services = await self._c.health.check_all()
        own = self._c.health.supervisor_view("orchestrator")
        now = timestamp_pb2.Timestamp()
        now.GetCurrentTime()
        overall = "SERVING" if all(s.status == "SERVING" for s in services) else "DEGRADED"
        return pb.GetHealthResponse(
            status=overall,
            time=now,
            embedding_model=pb.EmbeddingModelHealth(**embedding_model_health()),
            services=[
                pb.ServiceHealth(
                    name="orchestrator", status="SERVING", address="self", latency_ms=0.0,
                    supervisor_state=str(own.get("state", "")), restarts=int(own.get("restarts", 0)),
                    last_exit=str(own.get("last_exit", "")),
                ),
                *(
                    pb.ServiceHealth(
                        name=s.name, status=s.status, address=s.address, latency_ms=s.latency_ms, detail=s.detail,
                        supervisor_state=s.supervisor_state, restarts=s.restarts, last_exit=s.last_exit,
                    )
                    for s in services
                ),
            ],
        )


def _scope(requested: str, what: str) -> str | None:
    """The tenant whose ``what`` a request reads (None: every tenant's): an admin may read any, a user its own."""
    if not requested:
        return visible_tenant()
    if not TENANT_PATTERN.match(requested):
        raise InvalidArgument(f"invalid tenant id {requested!r}", reason="INVALID_TENANT",
                              violations=[FieldViolation("tenant", "1-64 letters, digits, '.', '_' or '-'")])
    if requested != current_tenant() and not caller_is_admin():
        raise PermissionDenied(f"only an admin may read another tenant's {what}", reason="ADMIN_ROLE_REQUIRED",
                               metadata={"tenant": requested})
    return requested
