"""Domain results -> protobuf messages of docuthinker.nlp.v1 (and request enums -> domain)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from google.protobuf.message import Message

from docuthinker.nlp.v1 import nlp_service_pb2 as pb
from services.clients.results import Engine
from services.nlp import analyze, entities, generative, key_ideas, metering, sentiment, summarize, topics
from services.nlp.engines import TEXT_STATS
from services.runtime.errors import FieldViolation, InvalidArgument, status_from_exception
from services.vocabulary import analytics

_LABELS = {
    sentiment.Label.POSITIVE: pb.SENTIMENT_LABEL_POSITIVE,
    sentiment.Label.NEUTRAL: pb.SENTIMENT_LABEL_NEUTRAL,
    sentiment.Label.NEGATIVE: pb.SENTIMENT_LABEL_NEGATIVE,
}
_PRIORITIES = {1: pb.PRIORITY_HIGH, 2: pb.PRIORITY_MEDIUM, 3: pb.PRIORITY_LOW}
_STYLES = {summarize.Style.NARRATIVE: pb.SUMMARY_STYLE_NARRATIVE, summarize.Style.BULLETS: pb.SUMMARY_STYLE_BULLETS}


def engine(value: Engine) -> pb.Engine:
    return pb.Engine(provider=value.provider, model=value.model)


def with_llm_usage(response: Message, meter: metering.Meter) -> Message:
    """Adds the meter's charges to a response that reports them (``llm_usage``); others pass unchanged."""
    if meter.charges and "llm_usage" in response.DESCRIPTOR.fields_by_name:
        response.llm_usage.extend(
            pb.LlmUsage(
                provider=c.provider,
                model=c.model,
                calls=c.calls,
                input_tokens=c.usage.input_tokens,
                output_tokens=c.usage.output_tokens,
                cache_read_tokens=c.usage.cache_read_tokens,
                cache_write_tokens=c.usage.cache_write_tokens,
                cost_usd=c.usage.cost_usd,
            )
            for c in meter.charges
        )
    return response


def summary_style(value: int) -> summarize.Style:
    return summarize.Style.BULLETS if value == pb.SUMMARY_STYLE_BULLETS else summarize.Style.NARRATIVE


def entities_response(result: entities.EntitiesResult) -> pb.ExtractEntitiesResponse:
    return pb.ExtractEntitiesResponse(
        entities=[
            pb.Entity(
                text=e.text,
                label=e.label,
                count=e.count,
                mentions=[pb.Mention(text=m.text, start=m.start, end=m.end) for m in e.mentions],
            )
            for e in result.entities
        ],
        engine=engine(result.engine),
    )


def _sentiment(value: sentiment.Sentiment) -> pb.Sentiment:
    return pb.Sentiment(label=_LABELS[value.label], score=value.score, confidence=value.confidence)


def sentiment_response(result: sentiment.SentimentResult) -> pb.AnalyzeSentimentResponse:
    return pb.AnalyzeSentimentResponse(
        overall=_sentiment(result.overall),
        sentences=[
            pb.SentenceSentiment(text=s.text, start=s.start, end=s.end, sentiment=_sentiment(s.sentiment))
            for s in result.sentences
        ],
        engine=engine(result.engine),
    )


def summary_response(result: summarize.Summary) -> pb.SummarizeResponse:
    return pb.SummarizeResponse(
        summary=result.summary,
        bullets=list(result.bullets),
        sentences=[pb.SummarySentence(text=s.text, start=s.start, end=s.end) for s in result.sentences],
        style=_STYLES[result.style],
        engine=engine(result.engine),
    )


def key_ideas_response(result: key_ideas.KeyIdeas) -> pb.ExtractKeyIdeasResponse:
    return pb.ExtractKeyIdeasResponse(ideas=list(result.ideas), engine=engine(result.engine))


def topics_response(result: topics.TopicsResult) -> pb.ExtractTopicsResponse:
    return pb.ExtractTopicsResponse(
        topics=[pb.Topic(name=t.name, weight=t.weight) for t in result.topics], engine=engine(result.engine)
    )


def points_response(result: generative.Points) -> pb.GenerateDiscussionPointsResponse:
    return pb.GenerateDiscussionPointsResponse(points=list(result.points), engine=engine(result.engine))


def recommendations_response(result: generative.Recommendations) -> pb.GenerateRecommendationsResponse:
    return pb.GenerateRecommendationsResponse(
        recommendations=[
            pb.Recommendation(recommendation=a.recommendation, rationale=a.rationale, priority=_PRIORITIES[a.priority])
            for a in result.items
        ],
        engine=engine(result.engine),
    )


def rewrite_response(result: generative.Rewritten) -> pb.RewriteTextResponse:
    return pb.RewriteTextResponse(rewritten=result.text, style=result.instruction, engine=engine(result.engine))


def translate_response(result: generative.Rewritten) -> pb.TranslateTextResponse:
    return pb.TranslateTextResponse(
        translated=result.text, target_language=result.instruction, engine=engine(result.engine)
    )


def analytics_response(result: analytics.Analytics) -> pb.ComputeAnalyticsResponse:
    return pb.ComputeAnalyticsResponse(
        characters=result.characters,
        words=result.words,
        sentences=result.sentences,
        paragraphs=result.paragraphs,
        reading_time_minutes=result.reading_time_minutes,
        flesch_reading_ease=result.flesch_reading_ease,
        lexical_diversity=result.lexical_diversity,
        average_sentence_length=result.average_sentence_length,
        top_keywords=[pb.KeywordCount(keyword=k, count=c) for k, c in result.top_keywords],
        engine=engine(TEXT_STATS),
    )


# -- Analyze -----------------------------------------------------------------------------------
# operation -> (its protobuf value, the OperationResult field it fills, the converter of its result)
_ANALYZE: dict[analyze.Operation, tuple[int, str, Callable[[Any], Message]]] = {
    analyze.Operation.ENTITIES: (pb.OPERATION_ENTITIES, "entities", entities_response),
    analyze.Operation.SENTIMENT: (pb.OPERATION_SENTIMENT, "sentiment", sentiment_response),
    analyze.Operation.SUMMARY: (pb.OPERATION_SUMMARY, "summary", summary_response),
    analyze.Operation.BULLET_SUMMARY: (pb.OPERATION_BULLET_SUMMARY, "summary", summary_response),
    analyze.Operation.KEY_IDEAS: (pb.OPERATION_KEY_IDEAS, "key_ideas", key_ideas_response),
    analyze.Operation.TOPICS: (pb.OPERATION_TOPICS, "topics", topics_response),
    analyze.Operation.DISCUSSION_POINTS: (pb.OPERATION_DISCUSSION_POINTS, "discussion_points", points_response),
    analyze.Operation.RECOMMENDATIONS: (pb.OPERATION_RECOMMENDATIONS, "recommendations", recommendations_response),
    analyze.Operation.ANALYTICS: (pb.OPERATION_ANALYTICS, "analytics", analytics_response),
}
_OPERATIONS = {value: operation for operation, (value, _, _) in _ANALYZE.items()}


def analyze_operations(values: Sequence[int]) -> list[analyze.Operation]:
    """The requested operations; an unknown or unspecified one is INVALID_ARGUMENT."""
    requested = list(dict.fromkeys(values))
    invalid = [value for value in requested if value not in _OPERATIONS]
    if invalid:
        raise InvalidArgument(
            f"unknown or unspecified operation(s): {', '.join(str(op) for op in invalid)}",
            reason="UNKNOWN_OPERATION",
            violations=[FieldViolation("operations", f"unknown operation {op}") for op in invalid],
        )
    return [_OPERATIONS[value] for value in requested]


def analyze_event(event: analyze.OperationOutcome | analyze.AnalyzeDone) -> pb.AnalyzeResponse:
    if isinstance(event, analyze.AnalyzeDone):
        return pb.AnalyzeResponse(done=pb.AnalyzeDone(succeeded=event.succeeded, failed=event.failed))
    value, field, convert = _ANALYZE[event.operation]
    if event.error is not None:
        result = pb.OperationResult(operation=value, error=status_from_exception(event.error))
    else:
        result = pb.OperationResult(operation=value, **{field: with_llm_usage(convert(event.value), event.meter)})
    result.duration_ms = event.duration_ms
    return pb.AnalyzeResponse(result=result)
