"""gRPC transport of the NLP service: maps protobuf to domain calls, nothing more."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from google.protobuf.message import Message

from docuthinker.nlp.v1 import nlp_service_pb2 as pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from services.nlp import analyze, key_ideas, messages, metering, summarize, topics
from services.nlp.operations import NlpOperations
from services.nlp.sources import DocumentTexts, resolve_text
from services.runtime.errors import require

DEFAULT_TOP_KEYWORDS = 10

Handler = Callable[[Any, Any, Any], Awaitable[Message]]


def _reports_llm_usage(handler: Handler) -> Handler:
    """Meters the LLM calls a generative handler makes and reports them in its ``llm_usage``."""

    @functools.wraps(handler)
    async def run(self: Any, request: Any, context: Any) -> Message:
        with metering.metered() as meter:
            response = await handler(self, request, context)
        return messages.with_llm_usage(response, meter)

    return run


class NlpServicer(pb_grpc.NlpServiceServicer):
    def __init__(self, ops: NlpOperations, documents: DocumentTexts) -> None:
        self._ops = ops
        self._documents = documents

    async def _text(self, request) -> str:
        return await resolve_text(request, self._documents, self._ops.settings.max_text_chars)

    async def ExtractEntities(self, request: pb.ExtractEntitiesRequest, context) -> pb.ExtractEntitiesResponse:
        text = await self._text(request)
        return messages.entities_response(await self._ops.entities(text, list(request.labels)))

    async def AnalyzeSentiment(self, request: pb.AnalyzeSentimentRequest, context) -> pb.AnalyzeSentimentResponse:
        return messages.sentiment_response(await self._ops.sentiment(await self._text(request)))

    @_reports_llm_usage
    async def Summarize(self, request: pb.SummarizeRequest, context) -> pb.SummarizeResponse:
        limits = summarize.Limits.of(request.max_sentences, request.max_words)
        prepared = self._ops.prepare(await self._text(request))
        result = await self._ops.summary(prepared, messages.summary_style(request.style), limits)
        return messages.summary_response(result)

    @_reports_llm_usage
    async def ExtractKeyIdeas(self, request: pb.ExtractKeyIdeasRequest, context) -> pb.ExtractKeyIdeasResponse:
        count = key_ideas.count_of(request.max_ideas)
        prepared = self._ops.prepare(await self._text(request))
        return messages.key_ideas_response(await self._ops.key_ideas(prepared, count))

    async def ExtractTopics(self, request: pb.ExtractTopicsRequest, context) -> pb.ExtractTopicsResponse:
        count = topics.count_of(request.max_topics)
        prepared = self._ops.prepare(await self._text(request))
        return messages.topics_response(await self._ops.topics(prepared, count))

    @_reports_llm_usage
    async def GenerateDiscussionPoints(
        self, request: pb.GenerateDiscussionPointsRequest, context
    ) -> pb.GenerateDiscussionPointsResponse:
        prepared = self._ops.prepare(await self._text(request))
        return messages.points_response(await self._ops.discussion_points(prepared))

    @_reports_llm_usage
    async def GenerateRecommendations(
        self, request: pb.GenerateRecommendationsRequest, context
    ) -> pb.GenerateRecommendationsResponse:
        prepared = self._ops.prepare(await self._text(request))
        return messages.recommendations_response(await self._ops.recommendations(prepared))

    @_reports_llm_usage
    async def RewriteText(self, request: pb.RewriteTextRequest, context) -> pb.RewriteTextResponse:
        return messages.rewrite_response(await self._ops.rewrite(await self._text(request), request.style))

    @_reports_llm_usage
    async def TranslateText(self, request: pb.TranslateTextRequest, context) -> pb.TranslateTextResponse:
        text = await self._text(request)
        return messages.translate_response(await self._ops.translate(text, request.target_language))

    async def ComputeAnalytics(self, request: pb.ComputeAnalyticsRequest, context) -> pb.ComputeAnalyticsResponse:
        require(0 <= request.top_keywords <= 100, "top_keywords", "must be 0..100 (0 means 10)")
        text = await self._text(request)
        return messages.analytics_response(
            await self._ops.analytics(text, request.top_keywords or DEFAULT_TOP_KEYWORDS)
        )

    async def Analyze(self, request: pb.AnalyzeRequest, context):
        text = await self._text(request)
        jobs = analyze.plan(self._ops, self._ops.prepare(text), messages.analyze_operations(request.operations))
        async for event in analyze.stream(jobs):
            yield messages.analyze_event(event)
