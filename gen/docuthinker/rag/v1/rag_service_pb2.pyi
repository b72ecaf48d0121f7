from docuthinker.rag.v1 import answers_pb2 as _answers_pb2
from docuthinker.rag.v1 import documents_pb2 as _documents_pb2
from docuthinker.rag.v1 import sources_pb2 as _sources_pb2
from docuthinker.rag.v1 import versions_pb2 as _versions_pb2
from google.api import annotations_pb2 as _annotations_pb2
from google.api import httpbody_pb2 as _httpbody_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.rpc import status_pb2 as _status_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FusionMethod(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FUSION_METHOD_UNSPECIFIED: _ClassVar[FusionMethod]
    FUSION_METHOD_RRF: _ClassVar[FusionMethod]
    FUSION_METHOD_SCORE: _ClassVar[FusionMethod]
    FUSION_METHOD_DENSE_ONLY: _ClassVar[FusionMethod]
    FUSION_METHOD_KEYWORD_ONLY: _ClassVar[FusionMethod]

class CrewGrounding(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CREW_GROUNDING_UNSPECIFIED: _ClassVar[CrewGrounding]
    CREW_GROUNDING_CITED: _ClassVar[CrewGrounding]
    CREW_GROUNDING_RESTATED: _ClassVar[CrewGrounding]
    CREW_GROUNDING_NO_ANSWER: _ClassVar[CrewGrounding]
    CREW_GROUNDING_UNSUPPORTED: _ClassVar[CrewGrounding]
FUSION_METHOD_UNSPECIFIED: FusionMethod
FUSION_METHOD_RRF: FusionMethod
FUSION_METHOD_SCORE: FusionMethod
FUSION_METHOD_DENSE_ONLY: FusionMethod
FUSION_METHOD_KEYWORD_ONLY: FusionMethod
CREW_GROUNDING_UNSPECIFIED: CrewGrounding
CREW_GROUNDING_CITED: CrewGrounding
CREW_GROUNDING_RESTATED: CrewGrounding
CREW_GROUNDING_NO_ANSWER: CrewGrounding
CREW_GROUNDING_UNSUPPORTED: CrewGrounding

class UploadDocumentRequest(_message.Message):
    __slots__ = ("filename", "file", "document_key")
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_KEY_FIELD_NUMBER: _ClassVar[int]
    filename: str
    file: _httpbody_pb2.HttpBody
    document_key: str
    def __init__(self, filename: _Optional[str] = ..., file: _Optional[_Union[_httpbody_pb2.HttpBody, _Mapping]] = ..., document_key: _Optional[str] = ...) -> None: ...

class UploadDocumentResponse(_message.Message):
    __slots__ = ("progress", "done", "error")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    progress: _documents_pb2.IngestProgress
    done: _documents_pb2.IngestResult
    error: _status_pb2.Status
    def __init__(self, progress: _Optional[_Union[_documents_pb2.IngestProgress, _Mapping]] = ..., done: _Optional[_Union[_documents_pb2.IngestResult, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class UploadDocumentBodyRequest(_message.Message):
    __slots__ = ("filename", "file", "document_key")
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_KEY_FIELD_NUMBER: _ClassVar[int]
    filename: str
    file: _httpbody_pb2.HttpBody
    document_key: str
    def __init__(self, filename: _Optional[str] = ..., file: _Optional[_Union[_httpbody_pb2.HttpBody, _Mapping]] = ..., document_key: _Optional[str] = ...) -> None: ...

class UploadDocumentBodyResponse(_message.Message):
    __slots__ = ("progress", "done", "error")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    progress: _documents_pb2.IngestProgress
    done: _documents_pb2.IngestResult
    error: _status_pb2.Status
    def __init__(self, progress: _Optional[_Union[_documents_pb2.IngestProgress, _Mapping]] = ..., done: _Optional[_Union[_documents_pb2.IngestResult, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class IngestDocumentRequest(_message.Message):
    __slots__ = ("filename", "file", "document_key")
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_KEY_FIELD_NUMBER: _ClassVar[int]
    filename: str
    file: _httpbody_pb2.HttpBody
    document_key: str
    def __init__(self, filename: _Optional[str] = ..., file: _Optional[_Union[_httpbody_pb2.HttpBody, _Mapping]] = ..., document_key: _Optional[str] = ...) -> None: ...

class IngestDocumentResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _documents_pb2.IngestResult
    def __init__(self, result: _Optional[_Union[_documents_pb2.IngestResult, _Mapping]] = ...) -> None: ...

class IngestDocumentBodyRequest(_message.Message):
    __slots__ = ("filename", "file", "document_key")
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_KEY_FIELD_NUMBER: _ClassVar[int]
    filename: str
    file: _httpbody_pb2.HttpBody
    document_key: str
    def __init__(self, filename: _Optional[str] = ..., file: _Optional[_Union[_httpbody_pb2.HttpBody, _Mapping]] = ..., document_key: _Optional[str] = ...) -> None: ...

class IngestDocumentBodyResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _documents_pb2.IngestResult
    def __init__(self, result: _Optional[_Union[_documents_pb2.IngestResult, _Mapping]] = ...) -> None: ...

class StreamUploadDocumentRequest(_message.Message):
    __slots__ = ("header", "chunk")
    class Header(_message.Message):
        __slots__ = ("filename", "content_type", "size_bytes", "document_key")
        FILENAME_FIELD_NUMBER: _ClassVar[int]
        CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
        SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
        DOCUMENT_KEY_FIELD_NUMBER: _ClassVar[int]
        filename: str
        content_type: str
        size_bytes: int
        document_key: str
        def __init__(self, filename: _Optional[str] = ..., content_type: _Optional[str] = ..., size_bytes: _Optional[int] = ..., document_key: _Optional[str] = ...) -> None: ...
    HEADER_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    header: StreamUploadDocumentRequest.Header
    chunk: bytes
    def __init__(self, header: _Optional[_Union[StreamUploadDocumentRequest.Header, _Mapping]] = ..., chunk: _Optional[bytes] = ...) -> None: ...

class StreamUploadDocumentResponse(_message.Message):
    __slots__ = ("progress", "done", "error")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    progress: _documents_pb2.IngestProgress
    done: _documents_pb2.IngestResult
    error: _status_pb2.Status
    def __init__(self, progress: _Optional[_Union[_documents_pb2.IngestProgress, _Mapping]] = ..., done: _Optional[_Union[_documents_pb2.IngestResult, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class ListDocumentsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListDocumentsResponse(_message.Message):
    __slots__ = ("documents", "next_page_token", "total_size")
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    documents: _containers.RepeatedCompositeFieldContainer[_documents_pb2.Document]
    next_page_token: str
    total_size: int
    def __init__(self, documents: _Optional[_Iterable[_Union[_documents_pb2.Document, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class GetDocumentRequest(_message.Message):
    __slots__ = ("document_id",)
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    def __init__(self, document_id: _Optional[str] = ...) -> None: ...

class GetDocumentResponse(_message.Message):
    __slots__ = ("document",)
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    document: _documents_pb2.Document
    def __init__(self, document: _Optional[_Union[_documents_pb2.Document, _Mapping]] = ...) -> None: ...

class GetDocumentTextRequest(_message.Message):
    __slots__ = ("document_id",)
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    def __init__(self, document_id: _Optional[str] = ...) -> None: ...

class GetDocumentTextResponse(_message.Message):
    __slots__ = ("document", "sections")
    class Section(_message.Message):
        __slots__ = ("page", "sheet_name", "heading_path", "text")
        PAGE_FIELD_NUMBER: _ClassVar[int]
        SHEET_NAME_FIELD_NUMBER: _ClassVar[int]
        HEADING_PATH_FIELD_NUMBER: _ClassVar[int]
        TEXT_FIELD_NUMBER: _ClassVar[int]
        page: int
        sheet_name: str
        heading_path: _containers.RepeatedScalarFieldContainer[str]
        text: str
        def __init__(self, page: _Optional[int] = ..., sheet_name: _Optional[str] = ..., heading_path: _Optional[_Iterable[str]] = ..., text: _Optional[str] = ...) -> None: ...
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    SECTIONS_FIELD_NUMBER: _ClassVar[int]
    document: _documents_pb2.Document
    sections: _containers.RepeatedCompositeFieldContainer[GetDocumentTextResponse.Section]
    def __init__(self, document: _Optional[_Union[_documents_pb2.Document, _Mapping]] = ..., sections: _Optional[_Iterable[_Union[GetDocumentTextResponse.Section, _Mapping]]] = ...) -> None: ...

class GetDocumentContentRequest(_message.Message):
    __slots__ = ("document_id",)
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    def __init__(self, document_id: _Optional[str] = ...) -> None: ...

class LocateSpanRequest(_message.Message):
    __slots__ = ("document_id", "page", "char_start", "char_end", "answer_char_start", "answer_char_end")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    CHAR_START_FIELD_NUMBER: _ClassVar[int]
    CHAR_END_FIELD_NUMBER: _ClassVar[int]
    ANSWER_CHAR_START_FIELD_NUMBER: _ClassVar[int]
    ANSWER_CHAR_END_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    page: int
    char_start: int
    char_end: int
    answer_char_start: int
    answer_char_end: int
    def __init__(self, document_id: _Optional[str] = ..., page: _Optional[int] = ..., char_start: _Optional[int] = ..., char_end: _Optional[int] = ..., answer_char_start: _Optional[int] = ..., answer_char_end: _Optional[int] = ...) -> None: ...

class SpanBox(_message.Message):
    __slots__ = ("x0", "y0", "x1", "y1", "answer")
    X0_FIELD_NUMBER: _ClassVar[int]
    Y0_FIELD_NUMBER: _ClassVar[int]
    X1_FIELD_NUMBER: _ClassVar[int]
    Y1_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    x0: float
    y0: float
    x1: float
    y1: float
    answer: bool
    def __init__(self, x0: _Optional[float] = ..., y0: _Optional[float] = ..., x1: _Optional[float] = ..., y1: _Optional[float] = ..., answer: _Optional[bool] = ...) -> None: ...

class LocateSpanResponse(_message.Message):
    __slots__ = ("page", "source", "boxes", "words_found", "words_total")
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    BOXES_FIELD_NUMBER: _ClassVar[int]
    WORDS_FOUND_FIELD_NUMBER: _ClassVar[int]
    WORDS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    page: int
    source: str
    boxes: _containers.RepeatedCompositeFieldContainer[SpanBox]
    words_found: int
    words_total: int
    def __init__(self, page: _Optional[int] = ..., source: _Optional[str] = ..., boxes: _Optional[_Iterable[_Union[SpanBox, _Mapping]]] = ..., words_found: _Optional[int] = ..., words_total: _Optional[int] = ...) -> None: ...

class GetDocumentPreviewRequest(_message.Message):
    __slots__ = ("document_id",)
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    def __init__(self, document_id: _Optional[str] = ...) -> None: ...

class DeleteDocumentRequest(_message.Message):
    __slots__ = ("document_id",)
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    def __init__(self, document_id: _Optional[str] = ...) -> None: ...

class DeleteDocumentResponse(_message.Message):
    __slots__ = ("document_id", "chunks_removed")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_REMOVED_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    chunks_removed: int
    def __init__(self, document_id: _Optional[str] = ..., chunks_removed: _Optional[int] = ...) -> None: ...

class ReindexDocumentRequest(_message.Message):
    __slots__ = ("document_id",)
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    def __init__(self, document_id: _Optional[str] = ...) -> None: ...

class ReindexDocumentResponse(_message.Message):
    __slots__ = ("document",)
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    document: _documents_pb2.Document
    def __init__(self, document: _Optional[_Union[_documents_pb2.Document, _Mapping]] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("query", "top_k", "document_ids", "fusion", "expand_with_graph")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    FUSION_FIELD_NUMBER: _ClassVar[int]
    EXPAND_WITH_GRAPH_FIELD_NUMBER: _ClassVar[int]
    query: str
    top_k: int
    document_ids: _containers.RepeatedScalarFieldContainer[str]
    fusion: FusionMethod
    expand_with_graph: bool
    def __init__(self, query: _Optional[str] = ..., top_k: _Optional[int] = ..., document_ids: _Optional[_Iterable[str]] = ..., fusion: _Optional[_Union[FusionMethod, str]] = ..., expand_with_graph: _Optional[bool] = ...) -> None: ...

class SearchResponse(_message.Message):
    __slots__ = ("results", "fusion")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    FUSION_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_answers_pb2.ScoredChunk]
    fusion: FusionMethod
    def __init__(self, results: _Optional[_Iterable[_Union[_answers_pb2.ScoredChunk, _Mapping]]] = ..., fusion: _Optional[_Union[FusionMethod, str]] = ...) -> None: ...

class QueryRequest(_message.Message):
    __slots__ = ("question", "top_k", "document_ids")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    question: str
    top_k: int
    document_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, question: _Optional[str] = ..., top_k: _Optional[int] = ..., document_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class QueryResponse(_message.Message):
    __slots__ = ("answer",)
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    answer: _answers_pb2.Answer
    def __init__(self, answer: _Optional[_Union[_answers_pb2.Answer, _Mapping]] = ...) -> None: ...

class SpokenQueryRequest(_message.Message):
    __slots__ = ("audio", "top_k", "document_ids")
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    audio: _httpbody_pb2.HttpBody
    top_k: int
    document_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, audio: _Optional[_Union[_httpbody_pb2.HttpBody, _Mapping]] = ..., top_k: _Optional[int] = ..., document_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class SpokenQueryResponse(_message.Message):
    __slots__ = ("transcript", "language", "audio_seconds", "speech_model", "answer")
    TRANSCRIPT_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    AUDIO_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SPEECH_MODEL_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    transcript: str
    language: str
    audio_seconds: float
    speech_model: str
    answer: _answers_pb2.Answer
    def __init__(self, transcript: _Optional[str] = ..., language: _Optional[str] = ..., audio_seconds: _Optional[float] = ..., speech_model: _Optional[str] = ..., answer: _Optional[_Union[_answers_pb2.Answer, _Mapping]] = ...) -> None: ...

class SpokenQueryBodyRequest(_message.Message):
    __slots__ = ("audio", "top_k", "document_ids")
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    audio: _httpbody_pb2.HttpBody
    top_k: int
    document_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, audio: _Optional[_Union[_httpbody_pb2.HttpBody, _Mapping]] = ..., top_k: _Optional[int] = ..., document_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class SpokenQueryBodyResponse(_message.Message):
    __slots__ = ("transcript", "language", "audio_seconds", "speech_model", "answer")
    TRANSCRIPT_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    AUDIO_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SPEECH_MODEL_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    transcript: str
    language: str
    audio_seconds: float
    speech_model: str
    answer: _answers_pb2.Answer
    def __init__(self, transcript: _Optional[str] = ..., language: _Optional[str] = ..., audio_seconds: _Optional[float] = ..., speech_model: _Optional[str] = ..., answer: _Optional[_Union[_answers_pb2.Answer, _Mapping]] = ...) -> None: ...

class StreamQueryRequest(_message.Message):
    __slots__ = ("question", "top_k", "document_ids")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    question: str
    top_k: int
    document_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, question: _Optional[str] = ..., top_k: _Optional[int] = ..., document_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class RetrievalEvent(_message.Message):
    __slots__ = ("chunks",)
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    chunks: _containers.RepeatedCompositeFieldContainer[_answers_pb2.ScoredChunk]
    def __init__(self, chunks: _Optional[_Iterable[_Union[_answers_pb2.ScoredChunk, _Mapping]]] = ...) -> None: ...

class StreamQueryResponse(_message.Message):
    __slots__ = ("retrieval", "answer_delta", "citation", "done", "error")
    RETRIEVAL_FIELD_NUMBER: _ClassVar[int]
    ANSWER_DELTA_FIELD_NUMBER: _ClassVar[int]
    CITATION_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    retrieval: RetrievalEvent
    answer_delta: str
    citation: _answers_pb2.Citation
    done: _answers_pb2.Answer
    error: _status_pb2.Status
    def __init__(self, retrieval: _Optional[_Union[RetrievalEvent, _Mapping]] = ..., answer_delta: _Optional[str] = ..., citation: _Optional[_Union[_answers_pb2.Citation, _Mapping]] = ..., done: _Optional[_Union[_answers_pb2.Answer, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class AgentQueryRequest(_message.Message):
    __slots__ = ("question", "top_k", "document_ids")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    question: str
    top_k: int
    document_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, question: _Optional[str] = ..., top_k: _Optional[int] = ..., document_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class AgentQueryResponse(_message.Message):
    __slots__ = ("answer", "execution_summary")
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    answer: _answers_pb2.Answer
    execution_summary: _answers_pb2.ExecutionSummary
    def __init__(self, answer: _Optional[_Union[_answers_pb2.Answer, _Mapping]] = ..., execution_summary: _Optional[_Union[_answers_pb2.ExecutionSummary, _Mapping]] = ...) -> None: ...

class StreamAgentQueryRequest(_message.Message):
    __slots__ = ("question", "top_k", "document_ids")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    question: str
    top_k: int
    document_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, question: _Optional[str] = ..., top_k: _Optional[int] = ..., document_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class AgentNodeEvent(_message.Message):
    __slots__ = ("step", "planned_queries", "chunks_retrieved", "draft_answer", "support_status")
    STEP_FIELD_NUMBER: _ClassVar[int]
    PLANNED_QUERIES_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_RETRIEVED_FIELD_NUMBER: _ClassVar[int]
    DRAFT_ANSWER_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_STATUS_FIELD_NUMBER: _ClassVar[int]
    step: _answers_pb2.AgentStep
    planned_queries: _containers.RepeatedScalarFieldContainer[str]
    chunks_retrieved: int
    draft_answer: str
    support_status: _answers_pb2.SupportStatus
    def __init__(self, step: _Optional[_Union[_answers_pb2.AgentStep, _Mapping]] = ..., planned_queries: _Optional[_Iterable[str]] = ..., chunks_retrieved: _Optional[int] = ..., draft_answer: _Optional[str] = ..., support_status: _Optional[_Union[_answers_pb2.SupportStatus, str]] = ...) -> None: ...

class StreamAgentQueryResponse(_message.Message):
    __slots__ = ("node", "done", "error")
    NODE_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    node: AgentNodeEvent
    done: AgentQueryResponse
    error: _status_pb2.Status
    def __init__(self, node: _Optional[_Union[AgentNodeEvent, _Mapping]] = ..., done: _Optional[_Union[AgentQueryResponse, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class CrewAnalyzeRequest(_message.Message):
    __slots__ = ("text", "document_id", "question")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    text: str
    document_id: str
    question: str
    def __init__(self, text: _Optional[str] = ..., document_id: _Optional[str] = ..., question: _Optional[str] = ...) -> None: ...

class CrewTaskOutput(_message.Message):
    __slots__ = ("agent", "role", "output", "engine", "tools_used", "grounding", "citations")
    AGENT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    TOOLS_USED_FIELD_NUMBER: _ClassVar[int]
    GROUNDING_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    agent: str
    role: str
    output: str
    engine: _answers_pb2.Engine
    tools_used: _containers.RepeatedScalarFieldContainer[str]
    grounding: CrewGrounding
    citations: _containers.RepeatedCompositeFieldContainer[_answers_pb2.Citation]
    def __init__(self, agent: _Optional[str] = ..., role: _Optional[str] = ..., output: _Optional[str] = ..., engine: _Optional[_Union[_answers_pb2.Engine, _Mapping]] = ..., tools_used: _Optional[_Iterable[str]] = ..., grounding: _Optional[_Union[CrewGrounding, str]] = ..., citations: _Optional[_Iterable[_Union[_answers_pb2.Citation, _Mapping]]] = ...) -> None: ...

class CrewAnalyzeResponse(_message.Message):
    __slots__ = ("tasks", "final_output", "usage")
    TASKS_FIELD_NUMBER: _ClassVar[int]
    FINAL_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[CrewTaskOutput]
    final_output: str
    usage: _answers_pb2.Usage
    def __init__(self, tasks: _Optional[_Iterable[_Union[CrewTaskOutput, _Mapping]]] = ..., final_output: _Optional[str] = ..., usage: _Optional[_Union[_answers_pb2.Usage, _Mapping]] = ...) -> None: ...

class AnalyzeDocumentRequest(_message.Message):
    __slots__ = ("text", "document_id", "question", "translate_lang", "sync_graph", "skip_crew")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    TRANSLATE_LANG_FIELD_NUMBER: _ClassVar[int]
    SYNC_GRAPH_FIELD_NUMBER: _ClassVar[int]
    SKIP_CREW_FIELD_NUMBER: _ClassVar[int]
    text: str
    document_id: str
    question: str
    translate_lang: str
    sync_graph: bool
    skip_crew: bool
    def __init__(self, text: _Optional[str] = ..., document_id: _Optional[str] = ..., question: _Optional[str] = ..., translate_lang: _Optional[str] = ..., sync_graph: _Optional[bool] = ..., skip_crew: _Optional[bool] = ...) -> None: ...

class SentimentSummary(_message.Message):
    __slots__ = ("label", "score", "confidence")
    LABEL_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    label: str
    score: float
    confidence: float
    def __init__(self, label: _Optional[str] = ..., score: _Optional[float] = ..., confidence: _Optional[float] = ...) -> None: ...

class AnalyzeDocumentResponse(_message.Message):
    __slots__ = ("document_id", "overview", "topics", "qa_answer", "supporting_context", "crew_analysis", "citations", "steps_run", "sentiment", "translation", "translation_error", "crew_error")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    OVERVIEW_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    QA_ANSWER_FIELD_NUMBER: _ClassVar[int]
    SUPPORTING_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    CREW_ANALYSIS_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    STEPS_RUN_FIELD_NUMBER: _ClassVar[int]
    SENTIMENT_FIELD_NUMBER: _ClassVar[int]
    TRANSLATION_FIELD_NUMBER: _ClassVar[int]
    TRANSLATION_ERROR_FIELD_NUMBER: _ClassVar[int]
    CREW_ERROR_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    overview: str
    topics: _containers.RepeatedScalarFieldContainer[str]
    qa_answer: str
    supporting_context: _containers.RepeatedScalarFieldContainer[str]
    crew_analysis: CrewAnalyzeResponse
    citations: _containers.RepeatedCompositeFieldContainer[_answers_pb2.Citation]
    steps_run: _containers.RepeatedScalarFieldContainer[str]
    sentiment: SentimentSummary
    translation: str
    translation_error: _status_pb2.Status
    crew_error: _status_pb2.Status
    def __init__(self, document_id: _Optional[str] = ..., overview: _Optional[str] = ..., topics: _Optional[_Iterable[str]] = ..., qa_answer: _Optional[str] = ..., supporting_context: _Optional[_Iterable[str]] = ..., crew_analysis: _Optional[_Union[CrewAnalyzeResponse, _Mapping]] = ..., citations: _Optional[_Iterable[_Union[_answers_pb2.Citation, _Mapping]]] = ..., steps_run: _Optional[_Iterable[str]] = ..., sentiment: _Optional[_Union[SentimentSummary, _Mapping]] = ..., translation: _Optional[str] = ..., translation_error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ..., crew_error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class StreamAnalyzeDocumentRequest(_message.Message):
    __slots__ = ("text", "document_id", "question", "translate_lang", "sync_graph", "skip_crew")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    TRANSLATE_LANG_FIELD_NUMBER: _ClassVar[int]
    SYNC_GRAPH_FIELD_NUMBER: _ClassVar[int]
    SKIP_CREW_FIELD_NUMBER: _ClassVar[int]
    text: str
    document_id: str
    question: str
    translate_lang: str
    sync_graph: bool
    skip_crew: bool
    def __init__(self, text: _Optional[str] = ..., document_id: _Optional[str] = ..., question: _Optional[str] = ..., translate_lang: _Optional[str] = ..., sync_graph: _Optional[bool] = ..., skip_crew: _Optional[bool] = ...) -> None: ...

class AnalysisNodeEvent(_message.Message):
    __slots__ = ("node", "summary", "duration_ms")
    NODE_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    node: str
    summary: str
    duration_ms: float
    def __init__(self, node: _Optional[str] = ..., summary: _Optional[str] = ..., duration_ms: _Optional[float] = ...) -> None: ...

class StreamAnalyzeDocumentResponse(_message.Message):
    __slots__ = ("node", "done", "error")
    NODE_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    node: AnalysisNodeEvent
    done: AnalyzeDocumentResponse
    error: _status_pb2.Status
    def __init__(self, node: _Optional[_Union[AnalysisNodeEvent, _Mapping]] = ..., done: _Optional[_Union[AnalyzeDocumentResponse, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class ListDocumentVersionsRequest(_message.Message):
    __slots__ = ("document_id",)
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    def __init__(self, document_id: _Optional[str] = ...) -> None: ...

class ListDocumentVersionsResponse(_message.Message):
    __slots__ = ("document", "versions")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    document: _documents_pb2.Document
    versions: _containers.RepeatedCompositeFieldContainer[_versions_pb2.DocumentVersion]
    def __init__(self, document: _Optional[_Union[_documents_pb2.Document, _Mapping]] = ..., versions: _Optional[_Iterable[_Union[_versions_pb2.DocumentVersion, _Mapping]]] = ...) -> None: ...

class GetDocumentVersionContentRequest(_message.Message):
    __slots__ = ("document_id", "version")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    version: int
    def __init__(self, document_id: _Optional[str] = ..., version: _Optional[int] = ...) -> None: ...

class GetDocumentVersionTextRequest(_message.Message):
    __slots__ = ("document_id", "version")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    version: int
    def __init__(self, document_id: _Optional[str] = ..., version: _Optional[int] = ...) -> None: ...

class GetDocumentVersionTextResponse(_message.Message):
    __slots__ = ("version", "sections")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SECTIONS_FIELD_NUMBER: _ClassVar[int]
    version: _versions_pb2.DocumentVersion
    sections: _containers.RepeatedCompositeFieldContainer[GetDocumentTextResponse.Section]
    def __init__(self, version: _Optional[_Union[_versions_pb2.DocumentVersion, _Mapping]] = ..., sections: _Optional[_Iterable[_Union[GetDocumentTextResponse.Section, _Mapping]]] = ...) -> None: ...

class CompareDocumentVersionsRequest(_message.Message):
    __slots__ = ("document_id", "to")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    to: int
    def __init__(self, document_id: _Optional[str] = ..., to: _Optional[int] = ..., **kwargs) -> None: ...

class CompareDocumentVersionsResponse(_message.Message):
    __slots__ = ("document_id", "to", "changes", "added", "removed", "changed", "unchanged")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    to: int
    changes: _containers.RepeatedCompositeFieldContainer[_versions_pb2.PassageChange]
    added: int
    removed: int
    changed: int
    unchanged: int
    def __init__(self, document_id: _Optional[str] = ..., to: _Optional[int] = ..., changes: _Optional[_Iterable[_Union[_versions_pb2.PassageChange, _Mapping]]] = ..., added: _Optional[int] = ..., removed: _Optional[int] = ..., changed: _Optional[int] = ..., unchanged: _Optional[int] = ..., **kwargs) -> None: ...

class CreateSourceRequest(_message.Message):
    __slots__ = ("source",)
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    source: _sources_pb2.Source
    def __init__(self, source: _Optional[_Union[_sources_pb2.Source, _Mapping]] = ...) -> None: ...

class CreateSourceResponse(_message.Message):
    __slots__ = ("source",)
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    source: _sources_pb2.Source
    def __init__(self, source: _Optional[_Union[_sources_pb2.Source, _Mapping]] = ...) -> None: ...

class ListSourcesRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListSourcesResponse(_message.Message):
    __slots__ = ("sources", "next_page_token")
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    sources: _containers.RepeatedCompositeFieldContainer[_sources_pb2.Source]
    next_page_token: str
    def __init__(self, sources: _Optional[_Iterable[_Union[_sources_pb2.Source, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetSourceRequest(_message.Message):
    __slots__ = ("source_id",)
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    source_id: str
    def __init__(self, source_id: _Optional[str] = ...) -> None: ...

class GetSourceResponse(_message.Message):
    __slots__ = ("source",)
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    source: _sources_pb2.Source
    def __init__(self, source: _Optional[_Union[_sources_pb2.Source, _Mapping]] = ...) -> None: ...

class UpdateSourceRequest(_message.Message):
    __slots__ = ("source_id", "source", "update_mask")
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    source_id: str
    source: _sources_pb2.Source
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, source_id: _Optional[str] = ..., source: _Optional[_Union[_sources_pb2.Source, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class UpdateSourceResponse(_message.Message):
    __slots__ = ("source",)
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    source: _sources_pb2.Source
    def __init__(self, source: _Optional[_Union[_sources_pb2.Source, _Mapping]] = ...) -> None: ...

class DeleteSourceRequest(_message.Message):
    __slots__ = ("source_id", "keep_documents")
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    KEEP_DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    source_id: str
    keep_documents: bool
    def __init__(self, source_id: _Optional[str] = ..., keep_documents: _Optional[bool] = ...) -> None: ...

class DeleteSourceResponse(_message.Message):
    __slots__ = ("source_id", "documents_deleted")
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_DELETED_FIELD_NUMBER: _ClassVar[int]
    source_id: str
    documents_deleted: int
    def __init__(self, source_id: _Optional[str] = ..., documents_deleted: _Optional[int] = ...) -> None: ...

class SyncSourceRequest(_message.Message):
    __slots__ = ("source_id",)
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    source_id: str
    def __init__(self, source_id: _Optional[str] = ...) -> None: ...

class SyncSourceResponse(_message.Message):
    __slots__ = ("source",)
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    source: _sources_pb2.Source
    def __init__(self, source: _Optional[_Union[_sources_pb2.Source, _Mapping]] = ...) -> None: ...
