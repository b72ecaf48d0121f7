"""Operations: the units of work of the task DAG, the batch processor and the dead-letter queue.

Each operation takes JSON-able params and calls the real services through their typed clients
(NLP, RAG, graph: ``downstream.Peers``) or the orchestrator's own stores, returning JSON-able
data plus who served it. The
params of an operation are exactly what a dead letter stores, so any failed operation can
be replayed later from its letter alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from services.clients.nlp import LlmUsage
from services.orchestrator import graph_queries
from services.orchestrator.chat import ChatResponder
from services.orchestrator.costs import CostTracker
from services.orchestrator.downstream import Peers
from services.orchestrator.health import HealthProbe
from services.orchestrator.insights import InsightStore
from services.orchestrator.llm import track_attempts
from services.providers.base import Usage
from services.runtime.errors import FailedPrecondition, FieldViolation, InvalidArgument
from services.runtime.request_context import visible_tenant


@dataclass(frozen=True)
class Outcome:
    data: dict[str, Any]
    provider: str
    """Who served it: a service (nlp, rag, graph), an LLM provider, or "orchestrator"."""
    attempts: int = 1


Operation = Callable[[Mapping[str, Any], str], Awaitable[Outcome]]
"""An operation: its parameters and the caller's tenant."""


def _source(params: Mapping[str, Any]) -> dict[str, Any]:
    """The ``source`` oneof of an NLP request: inline text or a stored document."""
    if params.get("text"):
        return {"text": str(params["text"])}
    if params.get("document_id"):
        return {"document_id": str(params["document_id"])}
    raise InvalidArgument(
        "text or document_id is required",
        reason="MISSING_SOURCE",
        violations=[FieldViolation("text", "send text, or the document_id of a stored document")],
    )


def _document_ids(params: Mapping[str, Any]) -> list[str]:
    return [str(d) for d in params.get("document_ids") or ()]


def _required(params: Mapping[str, Any], name: str, description: str) -> str:
    value = str(params.get(name) or "").strip()
    if not value:
        raise InvalidArgument(f"{name} is required", reason=f"MISSING_{name.upper()}",
                              violations=[FieldViolation(name, description)])
    return value


class Operations:
    def __init__(
        self,
        peers: Peers,
        chat: ChatResponder,
        insights: InsightStore,
        costs: CostTracker,
        health: HealthProbe,
    ) -> None:
        self._peers = peers
        self._chat = chat
        self._insights = insights
        self._costs = costs
        self._health = health
        self._table: dict[str, Operation] = {
            "rag.ingest": self.ingest,
            "rag.extract": self.extract,
            "rag.query": self.rag_query,
            "rag.spoken_query": self.rag_spoken_query,
            "rag.search": self.rag_search,
            "nlp.summarize": self._nlp("summarize", style="narrative"),
            "nlp.bullet_summary": self._nlp("summarize", style="bullets"),
            "nlp.key_ideas": self._nlp("key_ideas"),
            "nlp.sentiment": self._nlp("sentiment"),
            "nlp.discussion_points": self._nlp("discussion_points"),
            "nlp.recommendations": self._nlp("recommendations"),
            "nlp.analytics": self._nlp("analytics"),
            "nlp.entities": self._nlp("entities"),
            "nlp.topics": self._nlp("topics"),
            "nlp.rewrite": self.rewrite,
            "nlp.translate": self.translate,
            "graph.query": self.graph_query,
            "graph.stats": self.graph_stats,
            "document.apply": self.apply_to_document,
            "chat": self.chat,
            "insights.store": self.store_insights,
            "system.health": self.system_health,
            "system.costs": self.system_costs,
            "unsupported": self.unsupported,
        }

    def names(self) -> list[str]:
        return sorted(self._table)

    def get(self, name: str) -> Operation:
        try:
            return self._table[name]
        except KeyError:
            raise InvalidArgument(f"unknown operation {name!r}", reason="UNKNOWN_OPERATION") from None

    async def run(self, name: str, params: Mapping[str, Any], tenant: str) -> Outcome:
        return await self.get(name)(params, tenant)

    async def apply_to_document(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        """``params["operation"]`` on inline text, or on a stored document's text (extracted first)."""
        operation = _required(params, "operation", "the operation to apply")
        if operation == "document.apply":
            raise InvalidArgument("document.apply cannot apply itself", reason="UNKNOWN_OPERATION")
        inner = {k: v for k, v in params.items() if k != "operation"}
        if not inner.get("text") and inner.get("document_id"):
            extracted = await self.extract(inner, tenant)
            inner["text"] = extracted.data["text"]
            outcome = await self.run(operation, inner, tenant)
            return Outcome(outcome.data, outcome.provider, outcome.attempts + 1)
        return await self.run(operation, inner, tenant)

    # -- NLP -------------------------------------------------------------------------------
    def _nlp(self, operation: str, **fixed: Any) -> Operation:
        async def run(params: Mapping[str, Any], tenant: str) -> Outcome:
            return await self._nlp_outcome(operation, params, **fixed)

        return run

    async def rewrite(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        return await self._nlp_outcome("rewrite", params, style=str(params.get("style") or "clear and concise"))

    async def translate(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        language = _required(params, "language", "target language, e.g. 'fr' or 'French'")
        return await self._nlp_outcome("translate", params, target_language=language)

    async def _nlp_outcome(self, operation: str, params: Mapping[str, Any], **options: Any) -> Outcome:
        analysis = await self._peers.nlp.analysis(operation, _source(params), **options)
        # The NLP service paid for its LLM calls with its own router: count them in our budgets.
        for line in analysis.usage:
            self._charge(line)
        return Outcome(analysis.data, "nlp")

    def _charge(self, usage: LlmUsage) -> None:
        """Records a downstream service's LLM spend; local models are free."""
        if usage.provider and usage.provider != "local" and (
                usage.cost_usd > 0 or usage.input_tokens or usage.output_tokens):
            self._costs.record(
                usage.provider,
                usage.model,
                Usage(usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens,
                      usage.cost_usd),
            )

    # -- RAG -------------------------------------------------------------------------------
    async def ingest(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        text = _required(params, "text", "the document text to store")
        filename = str(params.get("filename") or "document.txt")
        result = await self._peers.rag.ingest_text(text, filename)
        document = result.get("document", {})
        return Outcome(
            {
                "document_id": document.get("document_id", ""),
                "filename": document.get("filename", ""),
                "title": document.get("title", ""),
                "chunk_count": int(document.get("chunk_count", 0)),
                "duplicate": bool(result.get("duplicate", False)),
            },
            "rag",
        )

    async def extract(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        document_id = _required(params, "document_id", "id of a stored document")
        document = await self._peers.rag.document_text(document_id)
        text = "\n\n".join(section for section in document.sections if section)
        return Outcome(
            {
                "document_id": document_id,
                "filename": document.filename,
                "title": document.title,
                "characters": len(text),
                "text": text,
            },
            "rag",
        )

    async def rag_query(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        question = _required(params, "question", "the question to answer from the stored documents")
        answered = await self._peers.rag.query(question, int(params.get("top_k") or 0), _document_ids(params))
        self._charge(answered.usage)
        return Outcome(answered.data, "rag")

    async def rag_spoken_query(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        audio = params.get("audio") or b""
        if not audio:
            _required(params, "audio", "the recording of the spoken question")
        answered = await self._peers.rag.spoken_query(bytes(audio), int(params.get("top_k") or 0),
                                                      _document_ids(params))
        self._charge(answered.usage)
        return Outcome(answered.data, "rag")

    async def rag_search(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        query = _required(params, "query", "what to search for")
        found = await self._peers.rag.search(query, int(params.get("top_k") or 0), _document_ids(params),
                                             dense_only=bool(params.get("dense_only")))
        return Outcome(found, "rag")

    # -- graph -----------------------------------------------------------------------------
    async def graph_query(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        query = _required(params, "query", "Cypher, or a question about topics and entities")
        plan = graph_queries.plan(query, dict(params.get("params") or {}))
        rows: list[dict[str, Any]] = []
        columns: list[str] = []
        truncated = False
        for item in plan.queries:
            result = await self._peers.graph.query(item.cypher, dict(item.params), int(params.get("limit") or 0))
            columns = list(result.columns)
            truncated = truncated or result.truncated
            rows.extend(result.rows)
        if plan.translated:
            rows.sort(key=lambda r: float(r.get("weight") or 0), reverse=True)
        data = {"columns": columns, "rows": rows, "truncated": truncated, "translated": plan.translated}
        if plan.translated:
            data["phrase"] = plan.phrase
        return Outcome(data, "graph")

    async def graph_stats(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        return Outcome(asdict(await self._peers.graph.stats()), "graph")

    # -- orchestrator's own ------------------------------------------------------------------
    async def chat(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        message = _required(params, "message", "what to ask or say")
        with track_attempts() as attempts:
            reply = await self._chat.reply(
                tenant=tenant,
                message=message,
                user_id=str(params.get("user_id") or ""),
                document_id=str(params.get("document_id") or ""),
                document_text=str(params.get("text") or ""),
                provider=str(params.get("provider") or ""),
            )
        data = {
            "response": reply.response,
            "provider": reply.provider,
            "model": reply.model,
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "compacted": reply.compacted,
            "providers_tried": attempts.providers,
        }
        return Outcome(data, reply.provider, max(1, len(attempts.records)))

    async def store_insights(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        document_id = _required(params, "document_id", "id of the stored document")
        summary = str(params.get("summary") or "")
        ideas = [str(i) for i in params.get("ideas") or ()]
        insight = self._insights.save(tenant, document_id, summary, ideas)
        return Outcome(
            {"document_id": document_id, "stored": True, "summary_chars": len(summary),
             "key_ideas": len(insight.key_ideas)},
            "orchestrator",
        )

    async def system_health(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        services = await self._health.check_all()
        overall = "SERVING" if all(s.status == "SERVING" for s in services) else "DEGRADED"
        return Outcome(
            {"status": overall, "services": [{"name": s.name, "status": s.status, "latency_ms": s.latency_ms,
                                              "detail": s.detail, "restarts": s.restarts, "last_exit": s.last_exit}
                                             for s in services]},
            "orchestrator",
        )

    async def system_costs(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        report = self._costs.report(str(params.get("period") or "today"), scope=visible_tenant())
        return Outcome(
            {
                "period": report.period,
                "total_cost": report.total_cost,
                "total_requests": report.total_requests,
                "by_provider": {k: {"cost": b.cost, "requests": b.requests} for k, b in report.by_provider.items()},
                "by_intent": {k: {"cost": b.cost, "requests": b.requests} for k, b in report.by_intent.items()},
                "daily_spent": report.budget.daily_spent,
                "daily_budget": report.budget.daily_budget,
                "warning": report.budget.warning,
                "tenant": {
                    "tenant": report.budget.tenant.tenant,
                    "total_cost": report.tenant_total.cost,
                    "total_requests": report.tenant_total.requests,
                    "daily_spent": report.budget.tenant.daily_spent,
                    "daily_budget": report.budget.tenant.daily_budget,
                    "monthly_spent": report.budget.tenant.monthly_spent,
                    "monthly_budget": report.budget.tenant.monthly_budget,
                },
            },
            "orchestrator",
        )

    async def unsupported(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        raise FailedPrecondition(str(params.get("why") or "this intent is not served by the mesh"),
                                 reason="INTENT_NOT_SERVED", metadata={"intent": str(params.get("intent") or "")})

