"""The typed async client of the NLP service, for the other services and tools.

Typed calls (``summarize``, ``topics``, ``entities``, ``sentiment``, ``translate``) return plain
dataclasses; ``analysis`` runs any document operation by name and returns its reply as JSON
(proto field names) with the LLM spend it reports, for callers that pass results on as they
are (the orchestrator's operations, the MCP tools). Failures raise ``errors.remote_error``'s
domain error, the NLP service's status intact (e.g. translation's FAILED_PRECONDITION naming
the variables that enable it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from google.protobuf import json_format

from docuthinker.nlp.v1 import nlp_service_pb2 as pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from services.clients.results import Engine
from services.runtime.clients import ServiceClient

_LABELS = {
    pb.SENTIMENT_LABEL_POSITIVE: "positive",
    pb.SENTIMENT_LABEL_NEUTRAL: "neutral",
    pb.SENTIMENT_LABEL_NEGATIVE: "negative",
}
_STYLES = {"narrative": pb.SUMMARY_STYLE_NARRATIVE, "bullets": pb.SUMMARY_STYLE_BULLETS}

# Operation name -> (RPC, request type) for ``analysis``.
OPERATIONS: dict[str, tuple[str, type]] = {
    "summarize": ("Summarize", pb.SummarizeRequest),
    "key_ideas": ("ExtractKeyIdeas", pb.ExtractKeyIdeasRequest),
    "sentiment": ("AnalyzeSentiment", pb.AnalyzeSentimentRequest),
    "discussion_points": ("GenerateDiscussionPoints", pb.GenerateDiscussionPointsRequest),
    "recommendations": ("GenerateRecommendations", pb.GenerateRecommendationsRequest),
    "analytics": ("ComputeAnalytics", pb.ComputeAnalyticsRequest),
    "entities": ("ExtractEntities", pb.ExtractEntitiesRequest),
    "topics": ("ExtractTopics", pb.ExtractTopicsRequest),
    "rewrite": ("RewriteText", pb.RewriteTextRequest),
    "translate": ("TranslateText", pb.TranslateTextRequest),
}


@dataclass(frozen=True)
class Summary:
    text: str
    sentences: tuple[str, ...]
    """The source sentences of an extractive summary, in document order (empty for an LLM summary)."""
    engine: Engine
    bullets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Sentiment:
    label: str
    score: float
    confidence: float


@dataclass(frozen=True)
class Translation:
    text: str
    target_language: str
    engine: Engine


@dataclass(frozen=True)
class Topic:
    name: str
    weight: float


@dataclass(frozen=True)
class Entity:
    text: str
    label: str
    count: int


@dataclass(frozen=True)
class LlmUsage:
    """LLM spend the NLP service reports for one call (its own router paid for it)."""

    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float


@dataclass(frozen=True)
class Analysis:
    data: dict[str, Any]
    """The reply as JSON, proto field names."""
    usage: tuple[LlmUsage, ...] = ()


class NlpApi(Protocol):
    async def summarize(self, text: str, max_sentences: int = 0, style: str = "") -> Summary: ...

    async def topics(self, text: str, limit: int = 0) -> list[Topic]: ...

    async def entities(self, text: str, labels: Sequence[str] = ()) -> list[Entity]: ...

    async def sentiment(self, text: str) -> Sentiment: ...

    async def translate(self, text: str, target_language: str) -> Translation: ...

    async def analysis(self, operation: str, source: Mapping[str, str], *, timeout: float | None = None,
                       **options: Any) -> Analysis: ...


class NlpClient(ServiceClient):
    SERVICE = "nlp"
    STUB = pb_grpc.NlpServiceStub

    async def summarize(self, text: str, max_sentences: int = 0, style: str = "") -> Summary:
        request = pb.SummarizeRequest(text=text, max_sentences=max_sentences, style=_STYLES.get(style, pb.SUMMARY_STYLE_UNSPECIFIED))
        reply = await self._unary("Summarize", request)
        return Summary(reply.summary, tuple(s.text for s in reply.sentences), _engine(reply.engine),
                       tuple(reply.bullets))

    async def topics(self, text: str, limit: int = 0) -> list[Topic]:
        reply = await self._unary("ExtractTopics", pb.ExtractTopicsRequest(text=text, max_topics=limit))
        return [Topic(t.name, t.weight) for t in reply.topics]

    async def entities(self, text: str, labels: Sequence[str] = ()) -> list[Entity]:
        reply = await self._unary("ExtractEntities", pb.ExtractEntitiesRequest(text=text, labels=list(labels)))
        return [Entity(e.text, e.label, e.count) for e in reply.entities]

    async def sentiment(self, text: str) -> Sentiment:
        overall = (await self._unary("AnalyzeSentiment", pb.AnalyzeSentimentRequest(text=text))).overall
        return Sentiment(_LABELS.get(overall.label, "unspecified"), overall.score, overall.confidence)

    async def translate(self, text: str, target_language: str) -> Translation:
        request = pb.TranslateTextRequest(text=text, target_language=target_language)
        reply = await self._unary("TranslateText", request)
        return Translation(reply.translated, reply.target_language, _engine(reply.engine))

    async def analysis(self, operation: str, source: Mapping[str, str], *, timeout: float | None = None,
                       **options: Any) -> Analysis:
        """``operation`` (a key of ``OPERATIONS``) on ``source`` ({"text": ...} or {"document_id": ...});
        ``options`` are request fields, ``style`` of a summary by name ("narrative", "bullets")."""
        method, request_type = OPERATIONS[operation]
        if operation == "summarize" and "style" in options:
            options = {**options, "style": _STYLES[options["style"]]}
        reply = await self._unary(method, request_type(**source, **options), timeout=timeout)
        usage = tuple(LlmUsage(u.provider, u.model, u.input_tokens, u.output_tokens, u.cache_read_tokens,
                               u.cache_write_tokens, u.cost_usd) for u in getattr(reply, "llm_usage", ()))
        return Analysis(json_format.MessageToDict(reply, preserving_proto_field_name=True), usage)


def _engine(engine: pb.Engine) -> Engine:
    return Engine(engine.provider, engine.model)
