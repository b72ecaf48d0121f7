from google.api import annotations_pb2 as _annotations_pb2
from google.rpc import status_pb2 as _status_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SentimentLabel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SENTIMENT_LABEL_UNSPECIFIED: _ClassVar[SentimentLabel]
    SENTIMENT_LABEL_POSITIVE: _ClassVar[SentimentLabel]
    SENTIMENT_LABEL_NEUTRAL: _ClassVar[SentimentLabel]
    SENTIMENT_LABEL_NEGATIVE: _ClassVar[SentimentLabel]

class SummaryStyle(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUMMARY_STYLE_UNSPECIFIED: _ClassVar[SummaryStyle]
    SUMMARY_STYLE_NARRATIVE: _ClassVar[SummaryStyle]
    SUMMARY_STYLE_BULLETS: _ClassVar[SummaryStyle]

class Priority(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRIORITY_UNSPECIFIED: _ClassVar[Priority]
    PRIORITY_HIGH: _ClassVar[Priority]
    PRIORITY_MEDIUM: _ClassVar[Priority]
    PRIORITY_LOW: _ClassVar[Priority]

class Operation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OPERATION_UNSPECIFIED: _ClassVar[Operation]
    OPERATION_ENTITIES: _ClassVar[Operation]
    OPERATION_SENTIMENT: _ClassVar[Operation]
    OPERATION_SUMMARY: _ClassVar[Operation]
    OPERATION_BULLET_SUMMARY: _ClassVar[Operation]
    OPERATION_KEY_IDEAS: _ClassVar[Operation]
    OPERATION_TOPICS: _ClassVar[Operation]
    OPERATION_DISCUSSION_POINTS: _ClassVar[Operation]
    OPERATION_RECOMMENDATIONS: _ClassVar[Operation]
    OPERATION_ANALYTICS: _ClassVar[Operation]
SENTIMENT_LABEL_UNSPECIFIED: SentimentLabel
SENTIMENT_LABEL_POSITIVE: SentimentLabel
SENTIMENT_LABEL_NEUTRAL: SentimentLabel
SENTIMENT_LABEL_NEGATIVE: SentimentLabel
SUMMARY_STYLE_UNSPECIFIED: SummaryStyle
SUMMARY_STYLE_NARRATIVE: SummaryStyle
SUMMARY_STYLE_BULLETS: SummaryStyle
PRIORITY_UNSPECIFIED: Priority
PRIORITY_HIGH: Priority
PRIORITY_MEDIUM: Priority
PRIORITY_LOW: Priority
OPERATION_UNSPECIFIED: Operation
OPERATION_ENTITIES: Operation
OPERATION_SENTIMENT: Operation
OPERATION_SUMMARY: Operation
OPERATION_BULLET_SUMMARY: Operation
OPERATION_KEY_IDEAS: Operation
OPERATION_TOPICS: Operation
OPERATION_DISCUSSION_POINTS: Operation
OPERATION_RECOMMENDATIONS: Operation
OPERATION_ANALYTICS: Operation

class Engine(_message.Message):
    __slots__ = ("provider", "model")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    provider: str
    model: str
    def __init__(self, provider: _Optional[str] = ..., model: _Optional[str] = ...) -> None: ...

class LlmUsage(_message.Message):
    __slots__ = ("provider", "model", "calls", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    provider: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float
    def __init__(self, provider: _Optional[str] = ..., model: _Optional[str] = ..., calls: _Optional[int] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_tokens: _Optional[int] = ..., cache_write_tokens: _Optional[int] = ..., cost_usd: _Optional[float] = ...) -> None: ...

class Entity(_message.Message):
    __slots__ = ("text", "label", "count", "mentions")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    MENTIONS_FIELD_NUMBER: _ClassVar[int]
    text: str
    label: str
    count: int
    mentions: _containers.RepeatedCompositeFieldContainer[Mention]
    def __init__(self, text: _Optional[str] = ..., label: _Optional[str] = ..., count: _Optional[int] = ..., mentions: _Optional[_Iterable[_Union[Mention, _Mapping]]] = ...) -> None: ...

class Mention(_message.Message):
    __slots__ = ("text", "start", "end")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    text: str
    start: int
    end: int
    def __init__(self, text: _Optional[str] = ..., start: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...

class ExtractEntitiesRequest(_message.Message):
    __slots__ = ("text", "document_id", "labels")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    text: str
    document_id: str
    labels: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, text: _Optional[str] = ..., document_id: _Optional[str] = ..., labels: _Optional[_Iterable[str]] = ...) -> None: ...

class ExtractEntitiesResponse(_message.Message):
    __slots__ = ("entities", "engine")
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    entities: _containers.RepeatedCompositeFieldContainer[Entity]
    engine: Engine
    def __init__(self, entities: _Optional[_Iterable[_Union[Entity, _Mapping]]] = ..., engine: _Optional[_Union[Engine, _Mapping]] = ...) -> None: ...

class Sentiment(_message.Message):
    __slots__ = ("label", "score", "confidence")
    LABEL_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    label: SentimentLabel
    score: float
    confidence: float
    def __init__(self, label: _Optional[_Union[SentimentLabel, str]] = ..., score: _Optional[float] = ..., confidence: _Optional[float] = ...) -> None: ...

class SentenceSentiment(_message.Message):
    __slots__ = ("text", "start", "end", "sentiment")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    SENTIMENT_FIELD_NUMBER: _ClassVar[int]
    text: str
    start: int
    end: int
    sentiment: Sentiment
    def __init__(self, text: _Optional[str] = ..., start: _Optional[int] = ..., end: _Optional[int] = ..., sentiment: _Optional[_Union[Sentiment, _Mapping]] = ...) -> None: ...

class AnalyzeSentimentRequest(_message.Message):
    __slots__ = ("text", "document_id")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    text: str
    document_id: str
    def __init__(self, text: _Optional[str] = ..., document_id: _Optional[str] = ...) -> None: ...

class AnalyzeSentimentResponse(_message.Message):
    __slots__ = ("overall", "sentences", "engine")
    OVERALL_FIELD_NUMBER: _ClassVar[int]
    SENTENCES_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    overall: Sentiment
    sentences: _containers.RepeatedCompositeFieldContainer[SentenceSentiment]
    engine: Engine
    def __init__(self, overall: _Optional[_Union[Sentiment, _Mapping]] = ..., sentences: _Optional[_Iterable[_Union[SentenceSentiment, _Mapping]]] = ..., engine: _Optional[_Union[Engine, _Mapping]] = ...) -> None: ...

class SummarizeRequest(_message.Message):
    __slots__ = ("text", "document_id", "style", "max_sentences", "max_words")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    STYLE_FIELD_NUMBER: _ClassVar[int]
    MAX_SENTENCES_FIELD_NUMBER: _ClassVar[int]
    MAX_WORDS_FIELD_NUMBER: _ClassVar[int]
    text: str
    document_id: str
    style: SummaryStyle
    max_sentences: int
    max_words: int
    def __init__(self, text: _Optional[str] = ..., document_id: _Optional[str] = ..., style: _Optional[_Union[SummaryStyle, str]] = ..., max_sentences: _Optional[int] = ..., max_words: _Optional[int] = ...) -> None: ...

class SummarySentence(_message.Message):
    __slots__ = ("text", "start", "end")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    text: str
    start: int
    end: int
    def __init__(self, text: _Optional[str] = ..., start: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...

class SummarizeResponse(_message.Message):
    __slots__ = ("summary", "bullets", "sentences", "style", "engine", "llm_usage")
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    BULLETS_FIELD_NUMBER: _ClassVar[int]
    SENTENCES_FIELD_NUMBER: _ClassVar[int]
    STYLE_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    LLM_USAGE_FIELD_NUMBER: _ClassVar[int]
    summary: str
    bullets: _containers.RepeatedScalarFieldContainer[str]
    sentences: _containers.RepeatedCompositeFieldContainer[SummarySentence]
    style: SummaryStyle
    engine: Engine
    llm_usage: _containers.RepeatedCompositeFieldContainer[LlmUsage]
    def __init__(self, summary: _Optional[str] = ..., bullets: _Optional[_Iterable[str]] = ..., sentences: _Optional[_Iterable[_Union[SummarySentence, _Mapping]]] = ..., style: _Optional[_Union[SummaryStyle, str]] = ..., engine: _Optional[_Union[Engine, _Mapping]] = ..., llm_usage: _Optional[_Iterable[_Union[LlmUsage, _Mapping]]] = ...) -> None: ...

class ExtractKeyIdeasRequest(_message.Message):
    __slots__ = ("text", "document_id", "max_ideas")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_IDEAS_FIELD_NUMBER: _ClassVar[int]
    text: str
    document_id: str
    max_ideas: int
    def __init__(self, text: _Optional[str] = ..., document_id: _Optional[str] = ..., max_ideas: _Optional[int] = ...) -> None: ...

class ExtractKeyIdeasResponse(_message.Message):
    __slots__ = ("ideas", "engine", "llm_usage")
    IDEAS_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    LLM_USAGE_FIELD_NUMBER: _ClassVar[int]
    ideas: _containers.RepeatedScalarFieldContainer[str]
    engine: Engine
    llm_usage: _containers.RepeatedCompositeFieldContainer[LlmUsage]
    def __init__(self, ideas: _Optional[_Iterable[str]] = ..., engine: _Optional[_Union[Engine, _Mapping]] = ..., llm_usage: _Optional[_Iterable[_Union[LlmUsage, _Mapping]]] = ...) -> None: ...

class Topic(_message.Message):
    __slots__ = ("name", "weight")
    NAME_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    name: str
    weight: float
    def __init__(self, name: _Optional[str] = ..., weight: _Optional[float] = ...) -> None: ...

class ExtractTopicsRequest(_message.Message):
    __slots__ = ("text", "document_id", "max_topics")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_TOPICS_FIELD_NUMBER: _ClassVar[int]
    text: str
    document_id: str
    max_topics: int
    def __init__(self, text: _Optional[str] = ..., document_id: _Optional[str] = ..., max_topics: _Optional[int] = ...) -> None: ...

class ExtractTopicsResponse(_message.Message):
    __slots__ = ("topics", "engine")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[Topic]
    engine: Engine
    def __init__(self, topics: _Optional[_Iterable[_Union[Topic, _Mapping]]] = ..., engine: _Optional[_Union[Engine, _Mapping]] = ...) -> None: ...

class GenerateDiscussionPointsRequest(_message.Message):
    __slots__ = ("text", "document_id")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    text: str
    document_id: str
    def __init__(self, text: _Optional[str] = ..., document_id: _Optional[str] = ...) -> None: ...

class GenerateDiscussionPointsResponse(_message.Message):
    __slots__ = ("points", "engine", "llm_usage")
    POINTS_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    LLM_USAGE_FIELD_NUMBER: _ClassVar[int]
    points: _containers.RepeatedScalarFieldContainer[str]
    engine: Engine
    llm_usage: _containers.RepeatedCompositeFieldContainer[LlmUsage]
    def __init__(self, points: _Optional[_Iterable[str]] = ..., engine: _Optional[_Union[Engine, _Mapping]] = ..., llm_usage: _Optional[_Iterable[_Union[LlmUsage, _Mapping]]] = ...) -> None: ...

class Recommendation(_message.Message):
    __slots__ = ("recommendation", "rationale", "priority")
    RECOMMENDATION_FIELD_NUMBER: _ClassVar[int]
    RATIONALE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    recommendation: str
    rationale: str
    priority: Priority
    def __init__(self, recommendation: _Optional[str] = ..., rationale: _Optional[str] = ..., priority: _Optional[_Union[Priority, str]] = ...) -> None: ...

class GenerateRecommendationsRequest(_message.Message):
    __slots__ = ("text", "document_id")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    text: str
    document_id: str
    def __init__(self, text: _Optional[str] = ..., document_id: _Optional[str] = ...) -> None: ...

class GenerateRecommendationsResponse(_message.Message):
    __slots__ = ("recommendations", "engine", "llm_usage")
    RECOMMENDATIONS_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    LLM_USAGE_FIELD_NUMBER: _ClassVar[int]
    recommendations: _containers.RepeatedCompositeFieldContainer[Recommendation]
    engine: Engine
    llm_usage: _containers.RepeatedCompositeFieldContainer[LlmUsage]
    def __init__(self, recommendations: _Optional[_Iterable[_Union[Recommendation, _Mapping]]] = ..., engine: _Optional[_Union[Engine, _Mapping]] = ..., llm_usage: _Optional[_Iterable[_Union[LlmUsage, _Mapping]]] = ...) -> None: ...

class RewriteTextRequest(_message.Message):
    __slots__ = ("text", "document_id", "style")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    STYLE_FIELD_NUMBER: _ClassVar[int]
    text: str
    document_id: str
    style: str
    def __init__(self, text: _Optional[str] = ..., document_id: _Optional[str] = ..., style: _Optional[str] = ...) -> None: ...

class RewriteTextResponse(_message.Message):
    __slots__ = ("rewritten", "style", "engine", "llm_usage")
    REWRITTEN_FIELD_NUMBER: _ClassVar[int]
    STYLE_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    LLM_USAGE_FIELD_NUMBER: _ClassVar[int]
    rewritten: str
    style: str
    engine: Engine
    llm_usage: _containers.RepeatedCompositeFieldContainer[LlmUsage]
    def __init__(self, rewritten: _Optional[str] = ..., style: _Optional[str] = ..., engine: _Optional[_Union[Engine, _Mapping]] = ..., llm_usage: _Optional[_Iterable[_Union[LlmUsage, _Mapping]]] = ...) -> None: ...

class TranslateTextRequest(_message.Message):
    __slots__ = ("text", "document_id", "target_language")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    text: str
    document_id: str
    target_language: str
    def __init__(self, text: _Optional[str] = ..., document_id: _Optional[str] = ..., target_language: _Optional[str] = ...) -> None: ...

class TranslateTextResponse(_message.Message):
    __slots__ = ("translated", "target_language", "engine", "llm_usage")
    TRANSLATED_FIELD_NUMBER: _ClassVar[int]
    TARGET_LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    LLM_USAGE_FIELD_NUMBER: _ClassVar[int]
    translated: str
    target_language: str
    engine: Engine
    llm_usage: _containers.RepeatedCompositeFieldContainer[LlmUsage]
    def __init__(self, translated: _Optional[str] = ..., target_language: _Optional[str] = ..., engine: _Optional[_Union[Engine, _Mapping]] = ..., llm_usage: _Optional[_Iterable[_Union[LlmUsage, _Mapping]]] = ...) -> None: ...

class ComputeAnalyticsRequest(_message.Message):
    __slots__ = ("text", "document_id", "top_keywords")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TOP_KEYWORDS_FIELD_NUMBER: _ClassVar[int]
    text: str
    document_id: str
    top_keywords: int
    def __init__(self, text: _Optional[str] = ..., document_id: _Optional[str] = ..., top_keywords: _Optional[int] = ...) -> None: ...

class KeywordCount(_message.Message):
    __slots__ = ("keyword", "count")
    KEYWORD_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    keyword: str
    count: int
    def __init__(self, keyword: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class ComputeAnalyticsResponse(_message.Message):
    __slots__ = ("characters", "words", "sentences", "paragraphs", "reading_time_minutes", "flesch_reading_ease", "lexical_diversity", "top_keywords", "average_sentence_length", "engine")
    CHARACTERS_FIELD_NUMBER: _ClassVar[int]
    WORDS_FIELD_NUMBER: _ClassVar[int]
    SENTENCES_FIELD_NUMBER: _ClassVar[int]
    PARAGRAPHS_FIELD_NUMBER: _ClassVar[int]
    READING_TIME_MINUTES_FIELD_NUMBER: _ClassVar[int]
    FLESCH_READING_EASE_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_DIVERSITY_FIELD_NUMBER: _ClassVar[int]
    TOP_KEYWORDS_FIELD_NUMBER: _ClassVar[int]
    AVERAGE_SENTENCE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    characters: int
    words: int
    sentences: int
    paragraphs: int
    reading_time_minutes: float
    flesch_reading_ease: float
    lexical_diversity: float
    top_keywords: _containers.RepeatedCompositeFieldContainer[KeywordCount]
    average_sentence_length: float
    engine: Engine
    def __init__(self, characters: _Optional[int] = ..., words: _Optional[int] = ..., sentences: _Optional[int] = ..., paragraphs: _Optional[int] = ..., reading_time_minutes: _Optional[float] = ..., flesch_reading_ease: _Optional[float] = ..., lexical_diversity: _Optional[float] = ..., top_keywords: _Optional[_Iterable[_Union[KeywordCount, _Mapping]]] = ..., average_sentence_length: _Optional[float] = ..., engine: _Optional[_Union[Engine, _Mapping]] = ...) -> None: ...

class AnalyzeRequest(_message.Message):
    __slots__ = ("text", "document_id", "operations")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    text: str
    document_id: str
    operations: _containers.RepeatedScalarFieldContainer[Operation]
    def __init__(self, text: _Optional[str] = ..., document_id: _Optional[str] = ..., operations: _Optional[_Iterable[_Union[Operation, str]]] = ...) -> None: ...

class OperationResult(_message.Message):
    __slots__ = ("operation", "duration_ms", "entities", "sentiment", "summary", "key_ideas", "topics", "discussion_points", "recommendations", "analytics", "error")
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    SENTIMENT_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    KEY_IDEAS_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    DISCUSSION_POINTS_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDATIONS_FIELD_NUMBER: _ClassVar[int]
    ANALYTICS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    operation: Operation
    duration_ms: float
    entities: ExtractEntitiesResponse
    sentiment: AnalyzeSentimentResponse
    summary: SummarizeResponse
    key_ideas: ExtractKeyIdeasResponse
    topics: ExtractTopicsResponse
    discussion_points: GenerateDiscussionPointsResponse
    recommendations: GenerateRecommendationsResponse
    analytics: ComputeAnalyticsResponse
    error: _status_pb2.Status
    def __init__(self, operation: _Optional[_Union[Operation, str]] = ..., duration_ms: _Optional[float] = ..., entities: _Optional[_Union[ExtractEntitiesResponse, _Mapping]] = ..., sentiment: _Optional[_Union[AnalyzeSentimentResponse, _Mapping]] = ..., summary: _Optional[_Union[SummarizeResponse, _Mapping]] = ..., key_ideas: _Optional[_Union[ExtractKeyIdeasResponse, _Mapping]] = ..., topics: _Optional[_Union[ExtractTopicsResponse, _Mapping]] = ..., discussion_points: _Optional[_Union[GenerateDiscussionPointsResponse, _Mapping]] = ..., recommendations: _Optional[_Union[GenerateRecommendationsResponse, _Mapping]] = ..., analytics: _Optional[_Union[ComputeAnalyticsResponse, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class AnalyzeDone(_message.Message):
    __slots__ = ("succeeded", "failed")
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    succeeded: int
    failed: int
    def __init__(self, succeeded: _Optional[int] = ..., failed: _Optional[int] = ...) -> None: ...

class AnalyzeResponse(_message.Message):
    __slots__ = ("result", "done", "error")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    result: OperationResult
    done: AnalyzeDone
    error: _status_pb2.Status
    def __init__(self, result: _Optional[_Union[OperationResult, _Mapping]] = ..., done: _Optional[_Union[AnalyzeDone, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...
