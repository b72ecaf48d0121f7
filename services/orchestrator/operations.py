"""Operations: the units of work of the task DAG, the batch processor and the dead-letter queue.

Each operation takes JSON-able params and calls the real services over gRPC (NLP, RAG,
graph) or the orchestrator's own stores, returning JSON-able data plus who served it. The
params of an operation are exactly what a dead letter stores, so any failed operation can
be replayed later from its letter alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from google.api import httpbody_pb2
from google.protobuf import json_format

from docuthinker.graph.v1 import graph_service_pb2 as graph_pb
from docuthinker.nlp.v1 import nlp_service_pb2 as nlp_pb
from docuthinker.rag.v1 import rag_service_pb2 as rag_pb
from services.orchestrator import graph_queries
from services.orchestrator.chat import ChatResponder
from services.orchestrator.costs import CostTracker
from services.orchestrator.downstream import MeshClient
from services.orchestrator.health import HealthProbe
from services.orchestrator.insights import InsightStore
from services.orchestrator.llm import track_attempts
from services.providers.base import Usage
from services.runtime.errors import FailedPrecondition, FieldViolation, InvalidArgument


@dataclass(frozen=True)
class Outcome:
    data: dict[str, Any]
    provider: str
    """Who served it: a service (nlp, rag, graph), an LLM provider, or "orchestrator"."""
    attempts: int = 1


Operation = Callable[[Mapping[str, Any], str], Awaitable[Outcome]]
"""An operation: its parameters and the caller's tenant."""


def to_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


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


def _required(params: Mapping[str, Any], name: str, description: str) -> str:
    value = str(params.get(name) or "").strip()
    if not value:
        raise InvalidArgument(f"{name} is required", reason=f"MISSING_{name.upper()}",
                              violations=[FieldViolation(name, description)])
    return value


class Operations:
    def __init__(
        self,
        mesh: MeshClient,
        chat: ChatResponder,
        insights: InsightStore,
        costs: CostTracker,
        health: HealthProbe,
    ) -> None:
        self._mesh = mesh
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
            "nlp.summarize": self._nlp("Summarize", nlp_pb.SummarizeRequest, style=nlp_pb.SUMMARY_STYLE_NARRATIVE),
            "nlp.bullet_summary": self._nlp("Summarize", nlp_pb.SummarizeRequest, style=nlp_pb.SUMMARY_STYLE_BULLETS),
            "nlp.key_ideas": self._nlp("ExtractKeyIdeas", nlp_pb.ExtractKeyIdeasRequest),
            "nlp.sentiment": self._nlp("AnalyzeSentiment", nlp_pb.AnalyzeSentimentRequest),
            "nlp.discussion_points": self._nlp("GenerateDiscussionPoints", nlp_pb.GenerateDiscussionPointsRequest),
            "nlp.recommendations": self._nlp("GenerateRecommendations", nlp_pb.GenerateRecommendationsRequest),
            "nlp.analytics": self._nlp("ComputeAnalytics", nlp_pb.ComputeAnalyticsRequest),
            "nlp.entities": self._nlp("ExtractEntities", nlp_pb.ExtractEntitiesRequest),
            "nlp.topics": self._nlp("ExtractTopics", nlp_pb.ExtractTopicsRequest),
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
    def _nlp(self, method: str, request_type: type, **fixed: Any) -> Operation:
        async def run(params: Mapping[str, Any], tenant: str) -> Outcome:
            return self._nlp_outcome(await self._mesh.call("nlp", method, request_type(**_source(params), **fixed)))

        return run

    async def rewrite(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        style = str(params.get("style") or "clear and concise")
        reply = await self._mesh.call("nlp", "RewriteText", nlp_pb.RewriteTextRequest(**_source(params), style=style))
        return self._nlp_outcome(reply)

    async def translate(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        language = _required(params, "language", "target language, e.g. 'fr' or 'French'")
        reply = await self._mesh.call(
            "nlp", "TranslateText", nlp_pb.TranslateTextRequest(**_source(params), target_language=language)
        )
        return self._nlp_outcome(reply)

    def _nlp_outcome(self, reply: Any) -> Outcome:
        # The NLP service paid for its LLM calls with its own router: count them in our budgets.
        for line in getattr(reply, "llm_usage", ()):
            self._charge(line.provider, line.model, line)
        return Outcome(to_dict(reply), "nlp")

    def _charge(self, provider: str, model: str, usage: Any) -> None:
        """Records a downstream service's LLM spend (a rag or nlp usage message); local models are free."""
        if provider and provider != "local" and (usage.cost_usd > 0 or usage.input_tokens or usage.output_tokens):
            self._costs.record(
                provider,
                model,
                Usage(usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens,
                      usage.cost_usd),
            )

    # -- RAG -------------------------------------------------------------------------------
    async def ingest(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        text = _required(params, "text", "the document text to store")
        filename = str(params.get("filename") or "document.txt")
        reply = await self._mesh.call(
            "rag",
            "IngestDocument",
            rag_pb.IngestDocumentRequest(
                filename=filename,
                file=httpbody_pb2.HttpBody(content_type="text/plain; charset=utf-8", data=text.encode("utf-8")),
            ),
        )
        document = reply.result.document
        return Outcome(
            {
                "document_id": document.document_id,
                "filename": document.filename,
                "title": document.title,
                "chunk_count": document.chunk_count,
                "duplicate": reply.result.duplicate,
            },
            "rag",
        )

    async def extract(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        document_id = _required(params, "document_id", "id of a stored document")
        reply = await self._mesh.call("rag", "GetDocumentText", rag_pb.GetDocumentTextRequest(document_id=document_id))
        text = "\n\n".join(section.text for section in reply.sections if section.text)
        return Outcome(
            {
                "document_id": document_id,
                "filename": reply.document.filename,
                "title": reply.document.title,
                "characters": len(text),
                "text": text,
            },
            "rag",
        )

    async def rag_query(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        question = _required(params, "question", "the question to answer from the stored documents")
        reply = await self._mesh.call(
            "rag",
            "Query",
            rag_pb.QueryRequest(
                question=question,
                top_k=int(params.get("top_k") or 0),
                document_ids=[str(d) for d in params.get("document_ids") or ()],
            ),
        )
        answer = reply.answer
        self._charge(answer.engine.provider, answer.engine.model, answer.usage)
        return Outcome(to_dict(answer), "rag")

    async def rag_spoken_query(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        audio = params.get("audio") or b""
        if not audio:
            _required(params, "audio", "the recording of the spoken question")
        reply = await self._mesh.call(
            "rag",
            "SpokenQuery",
            rag_pb.SpokenQueryRequest(
                audio=httpbody_pb2.HttpBody(data=bytes(audio)),
                top_k=int(params.get("top_k") or 0),
                document_ids=[str(d) for d in params.get("document_ids") or ()],
            ),
        )
        answer = reply.answer
        self._charge(answer.engine.provider, answer.engine.model, answer.usage)
        data = to_dict(reply)
        return Outcome({**data.get("answer", {}), "transcript": reply.transcript, "language": reply.language,
                        "audio_seconds": reply.audio_seconds, "speech_model": reply.speech_model}, "rag")

    async def rag_search(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        query = _required(params, "query", "what to search for")
        fusion = rag_pb.FUSION_METHOD_DENSE_ONLY if params.get("dense_only") else rag_pb.FUSION_METHOD_UNSPECIFIED
        reply = await self._mesh.call(
            "rag",
            "Search",
            rag_pb.SearchRequest(
                query=query,
                top_k=int(params.get("top_k") or 0),
                document_ids=[str(d) for d in params.get("document_ids") or ()],
                fusion=fusion,
            ),
        )
        return Outcome(to_dict(reply), "rag")

    # -- graph -----------------------------------------------------------------------------
    async def graph_query(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        query = _required(params, "query", "Cypher, or a question about topics and entities")
        plan = graph_queries.plan(query, dict(params.get("params") or {}))
        rows: list[dict[str, Any]] = []
        columns: list[str] = []
        truncated = False
        for item in plan.queries:
            request = graph_pb.QueryGraphRequest(cypher=item.cypher, limit=int(params.get("limit") or 0))
            request.params.update(item.params)
            reply = await self._mesh.call("graph", "QueryGraph", request)
            columns = list(reply.columns)
            truncated = truncated or reply.truncated
            rows.extend(json_format.MessageToDict(row) for row in reply.rows)
        if plan.translated:
            rows.sort(key=lambda r: float(r.get("weight") or 0), reverse=True)
        data = {"columns": columns, "rows": rows, "truncated": truncated, "translated": plan.translated}
        if plan.translated:
            data["phrase"] = plan.phrase
        return Outcome(data, "graph")

    async def graph_stats(self, params: Mapping[str, Any], tenant: str) -> Outcome:
        reply = await self._mesh.call("graph", "GetGraphStats", graph_pb.GetGraphStatsRequest())
        return Outcome(to_dict(reply), "graph")

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
        report = self._costs.report(str(params.get("period") or "today"))
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

