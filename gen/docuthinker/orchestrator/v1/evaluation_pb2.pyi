import datetime

from google.api import httpbody_pb2 as _httpbody_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EvalMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVAL_MODE_UNSPECIFIED: _ClassVar[EvalMode]
    EVAL_MODE_ANSWER: _ClassVar[EvalMode]
    EVAL_MODE_AGENT: _ClassVar[EvalMode]

class EvalRunState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVAL_RUN_STATE_UNSPECIFIED: _ClassVar[EvalRunState]
    EVAL_RUN_STATE_RUNNING: _ClassVar[EvalRunState]
    EVAL_RUN_STATE_SUCCEEDED: _ClassVar[EvalRunState]
    EVAL_RUN_STATE_CANCELLED: _ClassVar[EvalRunState]
    EVAL_RUN_STATE_FAILED: _ClassVar[EvalRunState]
    EVAL_RUN_STATE_INTERRUPTED: _ClassVar[EvalRunState]

class EvalChange(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVAL_CHANGE_UNSPECIFIED: _ClassVar[EvalChange]
    EVAL_CHANGE_BETTER: _ClassVar[EvalChange]
    EVAL_CHANGE_WORSE: _ClassVar[EvalChange]
    EVAL_CHANGE_SAME: _ClassVar[EvalChange]
    EVAL_CHANGE_ADDED: _ClassVar[EvalChange]
    EVAL_CHANGE_REMOVED: _ClassVar[EvalChange]
EVAL_MODE_UNSPECIFIED: EvalMode
EVAL_MODE_ANSWER: EvalMode
EVAL_MODE_AGENT: EvalMode
EVAL_RUN_STATE_UNSPECIFIED: EvalRunState
EVAL_RUN_STATE_RUNNING: EvalRunState
EVAL_RUN_STATE_SUCCEEDED: EvalRunState
EVAL_RUN_STATE_CANCELLED: EvalRunState
EVAL_RUN_STATE_FAILED: EvalRunState
EVAL_RUN_STATE_INTERRUPTED: EvalRunState
EVAL_CHANGE_UNSPECIFIED: EvalChange
EVAL_CHANGE_BETTER: EvalChange
EVAL_CHANGE_WORSE: EvalChange
EVAL_CHANGE_SAME: EvalChange
EVAL_CHANGE_ADDED: EvalChange
EVAL_CHANGE_REMOVED: EvalChange

class CreateEvalSetRequest(_message.Message):
    __slots__ = ("name", "file", "format", "filename")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    file: _httpbody_pb2.HttpBody
    format: str
    filename: str
    def __init__(self, name: _Optional[str] = ..., file: _Optional[_Union[_httpbody_pb2.HttpBody, _Mapping]] = ..., format: _Optional[str] = ..., filename: _Optional[str] = ...) -> None: ...

class EvalItem(_message.Message):
    __slots__ = ("id", "question", "answers", "document", "page", "sheet", "kind", "tags")
    ID_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SHEET_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    id: str
    question: str
    answers: _containers.RepeatedScalarFieldContainer[str]
    document: str
    page: int
    sheet: str
    kind: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., question: _Optional[str] = ..., answers: _Optional[_Iterable[str]] = ..., document: _Optional[str] = ..., page: _Optional[int] = ..., sheet: _Optional[str] = ..., kind: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ...) -> None: ...

class EvalSet(_message.Message):
    __slots__ = ("set_id", "name", "format", "item_count", "create_time", "kinds", "items")
    class KindsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    SET_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    ITEM_COUNT_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    set_id: str
    name: str
    format: str
    item_count: int
    create_time: _timestamp_pb2.Timestamp
    kinds: _containers.ScalarMap[str, int]
    items: _containers.RepeatedCompositeFieldContainer[EvalItem]
    def __init__(self, set_id: _Optional[str] = ..., name: _Optional[str] = ..., format: _Optional[str] = ..., item_count: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., kinds: _Optional[_Mapping[str, int]] = ..., items: _Optional[_Iterable[_Union[EvalItem, _Mapping]]] = ...) -> None: ...

class CreateEvalSetResponse(_message.Message):
    __slots__ = ("eval_set",)
    EVAL_SET_FIELD_NUMBER: _ClassVar[int]
    eval_set: EvalSet
    def __init__(self, eval_set: _Optional[_Union[EvalSet, _Mapping]] = ...) -> None: ...

class ListEvalSetsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListEvalSetsResponse(_message.Message):
    __slots__ = ("eval_sets", "next_page_token", "total_size")
    EVAL_SETS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    eval_sets: _containers.RepeatedCompositeFieldContainer[EvalSet]
    next_page_token: str
    total_size: int
    def __init__(self, eval_sets: _Optional[_Iterable[_Union[EvalSet, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class GetEvalSetRequest(_message.Message):
    __slots__ = ("set_id",)
    SET_ID_FIELD_NUMBER: _ClassVar[int]
    set_id: str
    def __init__(self, set_id: _Optional[str] = ...) -> None: ...

class GetEvalSetResponse(_message.Message):
    __slots__ = ("eval_set",)
    EVAL_SET_FIELD_NUMBER: _ClassVar[int]
    eval_set: EvalSet
    def __init__(self, eval_set: _Optional[_Union[EvalSet, _Mapping]] = ...) -> None: ...

class DeleteEvalSetRequest(_message.Message):
    __slots__ = ("set_id",)
    SET_ID_FIELD_NUMBER: _ClassVar[int]
    set_id: str
    def __init__(self, set_id: _Optional[str] = ...) -> None: ...

class DeleteEvalSetResponse(_message.Message):
    __slots__ = ("deleted", "runs_deleted")
    DELETED_FIELD_NUMBER: _ClassVar[int]
    RUNS_DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    runs_deleted: int
    def __init__(self, deleted: _Optional[bool] = ..., runs_deleted: _Optional[int] = ...) -> None: ...

class StartEvalRunRequest(_message.Message):
    __slots__ = ("set_id", "document_ids", "top_k", "mode", "label")
    SET_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    set_id: str
    document_ids: _containers.RepeatedScalarFieldContainer[str]
    top_k: int
    mode: EvalMode
    label: str
    def __init__(self, set_id: _Optional[str] = ..., document_ids: _Optional[_Iterable[str]] = ..., top_k: _Optional[int] = ..., mode: _Optional[_Union[EvalMode, str]] = ..., label: _Optional[str] = ...) -> None: ...

class EvalRunSettings(_message.Message):
    __slots__ = ("mode", "top_k", "document_ids")
    MODE_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    mode: EvalMode
    top_k: int
    document_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, mode: _Optional[_Union[EvalMode, str]] = ..., top_k: _Optional[int] = ..., document_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class EvalFigures(_message.Message):
    __slots__ = ("items", "answerable", "unanswerable", "answer_correct", "citation_hit", "answered_rate", "correct_when_answered", "abstention_unanswerable", "latency_p50_s", "latency_p95_s", "latency_mean_s", "errors")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    ANSWERABLE_FIELD_NUMBER: _ClassVar[int]
    UNANSWERABLE_FIELD_NUMBER: _ClassVar[int]
    ANSWER_CORRECT_FIELD_NUMBER: _ClassVar[int]
    CITATION_HIT_FIELD_NUMBER: _ClassVar[int]
    ANSWERED_RATE_FIELD_NUMBER: _ClassVar[int]
    CORRECT_WHEN_ANSWERED_FIELD_NUMBER: _ClassVar[int]
    ABSTENTION_UNANSWERABLE_FIELD_NUMBER: _ClassVar[int]
    LATENCY_P50_S_FIELD_NUMBER: _ClassVar[int]
    LATENCY_P95_S_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MEAN_S_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    items: int
    answerable: int
    unanswerable: int
    answer_correct: float
    citation_hit: float
    answered_rate: float
    correct_when_answered: float
    abstention_unanswerable: float
    latency_p50_s: float
    latency_p95_s: float
    latency_mean_s: float
    errors: int
    def __init__(self, items: _Optional[int] = ..., answerable: _Optional[int] = ..., unanswerable: _Optional[int] = ..., answer_correct: _Optional[float] = ..., citation_hit: _Optional[float] = ..., answered_rate: _Optional[float] = ..., correct_when_answered: _Optional[float] = ..., abstention_unanswerable: _Optional[float] = ..., latency_p50_s: _Optional[float] = ..., latency_p95_s: _Optional[float] = ..., latency_mean_s: _Optional[float] = ..., errors: _Optional[int] = ...) -> None: ...

class EvalTotals(_message.Message):
    __slots__ = ("overall", "per_kind", "per_tag")
    class PerKindEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: EvalFigures
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[EvalFigures, _Mapping]] = ...) -> None: ...
    class PerTagEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: EvalFigures
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[EvalFigures, _Mapping]] = ...) -> None: ...
    OVERALL_FIELD_NUMBER: _ClassVar[int]
    PER_KIND_FIELD_NUMBER: _ClassVar[int]
    PER_TAG_FIELD_NUMBER: _ClassVar[int]
    overall: EvalFigures
    per_kind: _containers.MessageMap[str, EvalFigures]
    per_tag: _containers.MessageMap[str, EvalFigures]
    def __init__(self, overall: _Optional[_Union[EvalFigures, _Mapping]] = ..., per_kind: _Optional[_Mapping[str, EvalFigures]] = ..., per_tag: _Optional[_Mapping[str, EvalFigures]] = ...) -> None: ...

class EvalRun(_message.Message):
    __slots__ = ("run_id", "set_id", "set_name", "label", "state", "total", "completed", "settings", "identities", "totals", "create_time", "finish_time", "error", "cancel_requested")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SET_ID_FIELD_NUMBER: _ClassVar[int]
    SET_NAME_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    IDENTITIES_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    FINISH_TIME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CANCEL_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    set_id: str
    set_name: str
    label: str
    state: EvalRunState
    total: int
    completed: int
    settings: EvalRunSettings
    identities: _struct_pb2.Struct
    totals: EvalTotals
    create_time: _timestamp_pb2.Timestamp
    finish_time: _timestamp_pb2.Timestamp
    error: str
    cancel_requested: bool
    def __init__(self, run_id: _Optional[str] = ..., set_id: _Optional[str] = ..., set_name: _Optional[str] = ..., label: _Optional[str] = ..., state: _Optional[_Union[EvalRunState, str]] = ..., total: _Optional[int] = ..., completed: _Optional[int] = ..., settings: _Optional[_Union[EvalRunSettings, _Mapping]] = ..., identities: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., totals: _Optional[_Union[EvalTotals, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finish_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., error: _Optional[str] = ..., cancel_requested: _Optional[bool] = ...) -> None: ...

class StartEvalRunResponse(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: EvalRun
    def __init__(self, run: _Optional[_Union[EvalRun, _Mapping]] = ...) -> None: ...

class GetEvalRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class GetEvalRunResponse(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: EvalRun
    def __init__(self, run: _Optional[_Union[EvalRun, _Mapping]] = ...) -> None: ...

class ListEvalRunsRequest(_message.Message):
    __slots__ = ("set_id", "page_size", "page_token")
    SET_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    set_id: str
    page_size: int
    page_token: str
    def __init__(self, set_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListEvalRunsResponse(_message.Message):
    __slots__ = ("runs", "next_page_token", "total_size")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[EvalRun]
    next_page_token: str
    total_size: int
    def __init__(self, runs: _Optional[_Iterable[_Union[EvalRun, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class CancelEvalRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class CancelEvalRunResponse(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: EvalRun
    def __init__(self, run: _Optional[_Union[EvalRun, _Mapping]] = ...) -> None: ...

class DeleteEvalRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class DeleteEvalRunResponse(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    def __init__(self, deleted: _Optional[bool] = ...) -> None: ...

class EvalCitation(_message.Message):
    __slots__ = ("filename", "document_id", "page", "sheet_name", "excerpt", "short_answer")
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SHEET_NAME_FIELD_NUMBER: _ClassVar[int]
    EXCERPT_FIELD_NUMBER: _ClassVar[int]
    SHORT_ANSWER_FIELD_NUMBER: _ClassVar[int]
    filename: str
    document_id: str
    page: int
    sheet_name: str
    excerpt: str
    short_answer: str
    def __init__(self, filename: _Optional[str] = ..., document_id: _Optional[str] = ..., page: _Optional[int] = ..., sheet_name: _Optional[str] = ..., excerpt: _Optional[str] = ..., short_answer: _Optional[str] = ...) -> None: ...

class EvalItemResult(_message.Message):
    __slots__ = ("position", "item", "answer", "short_answer", "support", "citations", "latency_ms", "answered", "refused", "correct", "cited", "error", "engine")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    SHORT_ANSWER_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    ANSWERED_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    CORRECT_FIELD_NUMBER: _ClassVar[int]
    CITED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    position: int
    item: EvalItem
    answer: str
    short_answer: str
    support: str
    citations: _containers.RepeatedCompositeFieldContainer[EvalCitation]
    latency_ms: float
    answered: bool
    refused: bool
    correct: bool
    cited: bool
    error: str
    engine: str
    def __init__(self, position: _Optional[int] = ..., item: _Optional[_Union[EvalItem, _Mapping]] = ..., answer: _Optional[str] = ..., short_answer: _Optional[str] = ..., support: _Optional[str] = ..., citations: _Optional[_Iterable[_Union[EvalCitation, _Mapping]]] = ..., latency_ms: _Optional[float] = ..., answered: _Optional[bool] = ..., refused: _Optional[bool] = ..., correct: _Optional[bool] = ..., cited: _Optional[bool] = ..., error: _Optional[str] = ..., engine: _Optional[str] = ...) -> None: ...

class ListEvalRunItemsRequest(_message.Message):
    __slots__ = ("run_id", "page_size", "page_token")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    page_size: int
    page_token: str
    def __init__(self, run_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListEvalRunItemsResponse(_message.Message):
    __slots__ = ("items", "next_page_token", "total_size")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[EvalItemResult]
    next_page_token: str
    total_size: int
    def __init__(self, items: _Optional[_Iterable[_Union[EvalItemResult, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class CompareEvalRunsRequest(_message.Message):
    __slots__ = ("base_run_id", "candidate_run_id")
    BASE_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    base_run_id: str
    candidate_run_id: str
    def __init__(self, base_run_id: _Optional[str] = ..., candidate_run_id: _Optional[str] = ...) -> None: ...

class EvalItemComparison(_message.Message):
    __slots__ = ("item_id", "question", "change", "base", "candidate")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    question: str
    change: EvalChange
    base: EvalItemResult
    candidate: EvalItemResult
    def __init__(self, item_id: _Optional[str] = ..., question: _Optional[str] = ..., change: _Optional[_Union[EvalChange, str]] = ..., base: _Optional[_Union[EvalItemResult, _Mapping]] = ..., candidate: _Optional[_Union[EvalItemResult, _Mapping]] = ...) -> None: ...

class EvalDifference(_message.Message):
    __slots__ = ("name", "base", "candidate")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    name: str
    base: _struct_pb2.Value
    candidate: _struct_pb2.Value
    def __init__(self, name: _Optional[str] = ..., base: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., candidate: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...

class CompareEvalRunsResponse(_message.Message):
    __slots__ = ("base", "candidate", "deltas", "differences", "items", "better", "worse", "same", "added", "removed")
    class DeltasEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    BASE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    DELTAS_FIELD_NUMBER: _ClassVar[int]
    DIFFERENCES_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    BETTER_FIELD_NUMBER: _ClassVar[int]
    WORSE_FIELD_NUMBER: _ClassVar[int]
    SAME_FIELD_NUMBER: _ClassVar[int]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    base: EvalRun
    candidate: EvalRun
    deltas: _containers.ScalarMap[str, float]
    differences: _containers.RepeatedCompositeFieldContainer[EvalDifference]
    items: _containers.RepeatedCompositeFieldContainer[EvalItemComparison]
    better: int
    worse: int
    same: int
    added: int
    removed: int
    def __init__(self, base: _Optional[_Union[EvalRun, _Mapping]] = ..., candidate: _Optional[_Union[EvalRun, _Mapping]] = ..., deltas: _Optional[_Mapping[str, float]] = ..., differences: _Optional[_Iterable[_Union[EvalDifference, _Mapping]]] = ..., items: _Optional[_Iterable[_Union[EvalItemComparison, _Mapping]]] = ..., better: _Optional[int] = ..., worse: _Optional[int] = ..., same: _Optional[int] = ..., added: _Optional[int] = ..., removed: _Optional[int] = ...) -> None: ...

class ExportEvalRunRequest(_message.Message):
    __slots__ = ("run_id", "format")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    format: str
    def __init__(self, run_id: _Optional[str] = ..., format: _Optional[str] = ...) -> None: ...
