from docuthinker.rag.v1 import documents_pb2 as _documents_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SupportStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUPPORT_STATUS_UNSPECIFIED: _ClassVar[SupportStatus]
    SUPPORT_STATUS_SUPPORTED: _ClassVar[SupportStatus]
    SUPPORT_STATUS_PARTIAL: _ClassVar[SupportStatus]
    SUPPORT_STATUS_INSUFFICIENT: _ClassVar[SupportStatus]
SUPPORT_STATUS_UNSPECIFIED: SupportStatus
SUPPORT_STATUS_SUPPORTED: SupportStatus
SUPPORT_STATUS_PARTIAL: SupportStatus
SUPPORT_STATUS_INSUFFICIENT: SupportStatus

class ScoredChunk(_message.Message):
    __slots__ = ("chunk_id", "text", "score", "provenance", "dense_score", "keyword_score")
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    DENSE_SCORE_FIELD_NUMBER: _ClassVar[int]
    KEYWORD_SCORE_FIELD_NUMBER: _ClassVar[int]
    chunk_id: str
    text: str
    score: float
    provenance: _documents_pb2.Provenance
    dense_score: float
    keyword_score: float
    def __init__(self, chunk_id: _Optional[str] = ..., text: _Optional[str] = ..., score: _Optional[float] = ..., provenance: _Optional[_Union[_documents_pb2.Provenance, _Mapping]] = ..., dense_score: _Optional[float] = ..., keyword_score: _Optional[float] = ...) -> None: ...

class Citation(_message.Message):
    __slots__ = ("marker", "document_id", "filename", "page", "sheet_name", "row_start", "row_end", "char_start", "char_end", "excerpt", "chunk_id", "score", "heading_path", "row_label", "column_header", "answer_char_start", "answer_char_end", "short_answer", "answer_type", "start_seconds", "end_seconds", "document_version")
    MARKER_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SHEET_NAME_FIELD_NUMBER: _ClassVar[int]
    ROW_START_FIELD_NUMBER: _ClassVar[int]
    ROW_END_FIELD_NUMBER: _ClassVar[int]
    CHAR_START_FIELD_NUMBER: _ClassVar[int]
    CHAR_END_FIELD_NUMBER: _ClassVar[int]
    EXCERPT_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    HEADING_PATH_FIELD_NUMBER: _ClassVar[int]
    ROW_LABEL_FIELD_NUMBER: _ClassVar[int]
    COLUMN_HEADER_FIELD_NUMBER: _ClassVar[int]
    ANSWER_CHAR_START_FIELD_NUMBER: _ClassVar[int]
    ANSWER_CHAR_END_FIELD_NUMBER: _ClassVar[int]
    SHORT_ANSWER_FIELD_NUMBER: _ClassVar[int]
    ANSWER_TYPE_FIELD_NUMBER: _ClassVar[int]
    START_SECONDS_FIELD_NUMBER: _ClassVar[int]
    END_SECONDS_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    marker: int
    document_id: str
    filename: str
    page: int
    sheet_name: str
    row_start: int
    row_end: int
    char_start: int
    char_end: int
    excerpt: str
    chunk_id: str
    score: float
    heading_path: _containers.RepeatedScalarFieldContainer[str]
    row_label: str
    column_header: str
    answer_char_start: int
    answer_char_end: int
    short_answer: str
    answer_type: str
    start_seconds: float
    end_seconds: float
    document_version: int
    def __init__(self, marker: _Optional[int] = ..., document_id: _Optional[str] = ..., filename: _Optional[str] = ..., page: _Optional[int] = ..., sheet_name: _Optional[str] = ..., row_start: _Optional[int] = ..., row_end: _Optional[int] = ..., char_start: _Optional[int] = ..., char_end: _Optional[int] = ..., excerpt: _Optional[str] = ..., chunk_id: _Optional[str] = ..., score: _Optional[float] = ..., heading_path: _Optional[_Iterable[str]] = ..., row_label: _Optional[str] = ..., column_header: _Optional[str] = ..., answer_char_start: _Optional[int] = ..., answer_char_end: _Optional[int] = ..., short_answer: _Optional[str] = ..., answer_type: _Optional[str] = ..., start_seconds: _Optional[float] = ..., end_seconds: _Optional[float] = ..., document_version: _Optional[int] = ...) -> None: ...

class Engine(_message.Message):
    __slots__ = ("provider", "model")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    provider: str
    model: str
    def __init__(self, provider: _Optional[str] = ..., model: _Optional[str] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_tokens: _Optional[int] = ..., cache_write_tokens: _Optional[int] = ..., cost_usd: _Optional[float] = ...) -> None: ...

class Answer(_message.Message):
    __slots__ = ("question", "answer", "citations", "retrieved_chunks", "support_status", "confidence_note", "engine", "usage")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    RETRIEVED_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_STATUS_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_NOTE_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    question: str
    answer: str
    citations: _containers.RepeatedCompositeFieldContainer[Citation]
    retrieved_chunks: _containers.RepeatedCompositeFieldContainer[ScoredChunk]
    support_status: SupportStatus
    confidence_note: str
    engine: Engine
    usage: Usage
    def __init__(self, question: _Optional[str] = ..., answer: _Optional[str] = ..., citations: _Optional[_Iterable[_Union[Citation, _Mapping]]] = ..., retrieved_chunks: _Optional[_Iterable[_Union[ScoredChunk, _Mapping]]] = ..., support_status: _Optional[_Union[SupportStatus, str]] = ..., confidence_note: _Optional[str] = ..., engine: _Optional[_Union[Engine, _Mapping]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ...) -> None: ...

class AgentStep(_message.Message):
    __slots__ = ("node", "summary", "duration_ms")
    NODE_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    node: str
    summary: str
    duration_ms: float
    def __init__(self, node: _Optional[str] = ..., summary: _Optional[str] = ..., duration_ms: _Optional[float] = ...) -> None: ...

class ExecutionSummary(_message.Message):
    __slots__ = ("planned_queries", "retrieval_performed", "chunks_retrieved", "validation_passed", "support_status", "steps", "retries")
    PLANNED_QUERIES_FIELD_NUMBER: _ClassVar[int]
    RETRIEVAL_PERFORMED_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_RETRIEVED_FIELD_NUMBER: _ClassVar[int]
    VALIDATION_PASSED_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_STATUS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    RETRIES_FIELD_NUMBER: _ClassVar[int]
    planned_queries: _containers.RepeatedScalarFieldContainer[str]
    retrieval_performed: bool
    chunks_retrieved: int
    validation_passed: bool
    support_status: SupportStatus
    steps: _containers.RepeatedCompositeFieldContainer[AgentStep]
    retries: int
    def __init__(self, planned_queries: _Optional[_Iterable[str]] = ..., retrieval_performed: _Optional[bool] = ..., chunks_retrieved: _Optional[int] = ..., validation_passed: _Optional[bool] = ..., support_status: _Optional[_Union[SupportStatus, str]] = ..., steps: _Optional[_Iterable[_Union[AgentStep, _Mapping]]] = ..., retries: _Optional[int] = ...) -> None: ...
