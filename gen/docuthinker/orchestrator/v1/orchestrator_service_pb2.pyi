import datetime

from docuthinker.orchestrator.v1 import evaluation_pb2 as _evaluation_pb2
from docuthinker.rag.v1 import answers_pb2 as _answers_pb2
from google.api import annotations_pb2 as _annotations_pb2
from google.api import httpbody_pb2 as _httpbody_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.rpc import status_pb2 as _status_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TaskState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_STATE_UNSPECIFIED: _ClassVar[TaskState]
    TASK_STATE_SUCCEEDED: _ClassVar[TaskState]
    TASK_STATE_FAILED: _ClassVar[TaskState]
    TASK_STATE_SKIPPED: _ClassVar[TaskState]

class CircuitState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CIRCUIT_STATE_UNSPECIFIED: _ClassVar[CircuitState]
    CIRCUIT_STATE_CLOSED: _ClassVar[CircuitState]
    CIRCUIT_STATE_OPEN: _ClassVar[CircuitState]
    CIRCUIT_STATE_HALF_OPEN: _ClassVar[CircuitState]
TASK_STATE_UNSPECIFIED: TaskState
TASK_STATE_SUCCEEDED: TaskState
TASK_STATE_FAILED: TaskState
TASK_STATE_SKIPPED: TaskState
CIRCUIT_STATE_UNSPECIFIED: CircuitState
CIRCUIT_STATE_CLOSED: CircuitState
CIRCUIT_STATE_OPEN: CircuitState
CIRCUIT_STATE_HALF_OPEN: CircuitState

class ProcessRequest(_message.Message):
    __slots__ = ("intent", "route", "text", "document_id", "message", "document_ids", "options", "user_id", "audio")
    INTENT_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    intent: str
    route: str
    text: str
    document_id: str
    message: str
    document_ids: _containers.RepeatedScalarFieldContainer[str]
    options: _struct_pb2.Struct
    user_id: str
    audio: bytes
    def __init__(self, intent: _Optional[str] = ..., route: _Optional[str] = ..., text: _Optional[str] = ..., document_id: _Optional[str] = ..., message: _Optional[str] = ..., document_ids: _Optional[_Iterable[str]] = ..., options: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., user_id: _Optional[str] = ..., audio: _Optional[bytes] = ...) -> None: ...

class Classification(_message.Message):
    __slots__ = ("intent", "confidence", "source", "reasoning")
    INTENT_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    REASONING_FIELD_NUMBER: _ClassVar[int]
    intent: str
    confidence: float
    source: str
    reasoning: str
    def __init__(self, intent: _Optional[str] = ..., confidence: _Optional[float] = ..., source: _Optional[str] = ..., reasoning: _Optional[str] = ...) -> None: ...

class SubtaskResult(_message.Message):
    __slots__ = ("task_id", "operation", "depends_on", "state", "data", "error", "provider", "attempts", "duration_ms")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    DEPENDS_ON_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    operation: str
    depends_on: _containers.RepeatedScalarFieldContainer[str]
    state: TaskState
    data: _struct_pb2.Struct
    error: _status_pb2.Status
    provider: str
    attempts: int
    duration_ms: float
    def __init__(self, task_id: _Optional[str] = ..., operation: _Optional[str] = ..., depends_on: _Optional[_Iterable[str]] = ..., state: _Optional[_Union[TaskState, str]] = ..., data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ..., provider: _Optional[str] = ..., attempts: _Optional[int] = ..., duration_ms: _Optional[float] = ...) -> None: ...

class ProcessAggregate(_message.Message):
    __slots__ = ("success", "trace_id", "data", "cost_usd")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    success: bool
    trace_id: str
    data: _struct_pb2.Struct
    cost_usd: float
    def __init__(self, success: _Optional[bool] = ..., trace_id: _Optional[str] = ..., data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., cost_usd: _Optional[float] = ...) -> None: ...

class ProcessResponse(_message.Message):
    __slots__ = ("classification", "subtask", "done", "error")
    CLASSIFICATION_FIELD_NUMBER: _ClassVar[int]
    SUBTASK_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    classification: Classification
    subtask: SubtaskResult
    done: ProcessAggregate
    error: _status_pb2.Status
    def __init__(self, classification: _Optional[_Union[Classification, _Mapping]] = ..., subtask: _Optional[_Union[SubtaskResult, _Mapping]] = ..., done: _Optional[_Union[ProcessAggregate, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class TokenUsage(_message.Message):
    __slots__ = ("input", "output", "cache_read", "cache_creation")
    INPUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_FIELD_NUMBER: _ClassVar[int]
    CACHE_CREATION_FIELD_NUMBER: _ClassVar[int]
    input: int
    output: int
    cache_read: int
    cache_creation: int
    def __init__(self, input: _Optional[int] = ..., output: _Optional[int] = ..., cache_read: _Optional[int] = ..., cache_creation: _Optional[int] = ...) -> None: ...

class RunAgentRequest(_message.Message):
    __slots__ = ("message", "system_prompt", "context", "provider", "max_iterations")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_PROMPT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MAX_ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    message: str
    system_prompt: str
    context: str
    provider: str
    max_iterations: int
    def __init__(self, message: _Optional[str] = ..., system_prompt: _Optional[str] = ..., context: _Optional[str] = ..., provider: _Optional[str] = ..., max_iterations: _Optional[int] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("name", "input", "is_error", "output")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    name: str
    input: _struct_pb2.Struct
    is_error: bool
    output: str
    def __init__(self, name: _Optional[str] = ..., input: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., is_error: _Optional[bool] = ..., output: _Optional[str] = ...) -> None: ...

class RunAgentResponse(_message.Message):
    __slots__ = ("response", "iterations", "tools_used", "tokens_used", "provider", "model", "max_iterations_reached")
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_USED_FIELD_NUMBER: _ClassVar[int]
    TOKENS_USED_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MAX_ITERATIONS_REACHED_FIELD_NUMBER: _ClassVar[int]
    response: str
    iterations: int
    tools_used: _containers.RepeatedCompositeFieldContainer[ToolCall]
    tokens_used: TokenUsage
    provider: str
    model: str
    max_iterations_reached: bool
    def __init__(self, response: _Optional[str] = ..., iterations: _Optional[int] = ..., tools_used: _Optional[_Iterable[_Union[ToolCall, _Mapping]]] = ..., tokens_used: _Optional[_Union[TokenUsage, _Mapping]] = ..., provider: _Optional[str] = ..., model: _Optional[str] = ..., max_iterations_reached: _Optional[bool] = ...) -> None: ...

class BatchDocument(_message.Message):
    __slots__ = ("id", "text", "document_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    text: str
    document_id: str
    def __init__(self, id: _Optional[str] = ..., text: _Optional[str] = ..., document_id: _Optional[str] = ...) -> None: ...

class ProcessBatchRequest(_message.Message):
    __slots__ = ("documents", "operation", "provider")
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    documents: _containers.RepeatedCompositeFieldContainer[BatchDocument]
    operation: str
    provider: str
    def __init__(self, documents: _Optional[_Iterable[_Union[BatchDocument, _Mapping]]] = ..., operation: _Optional[str] = ..., provider: _Optional[str] = ...) -> None: ...

class BatchItemResult(_message.Message):
    __slots__ = ("document_id", "success", "data", "error")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    success: bool
    data: _struct_pb2.Struct
    error: _status_pb2.Status
    def __init__(self, document_id: _Optional[str] = ..., success: _Optional[bool] = ..., data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class BatchProgress(_message.Message):
    __slots__ = ("completed", "total")
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    completed: int
    total: int
    def __init__(self, completed: _Optional[int] = ..., total: _Optional[int] = ...) -> None: ...

class BatchSummary(_message.Message):
    __slots__ = ("total_processed", "total_failed", "success_rate")
    TOTAL_PROCESSED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FAILED_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_RATE_FIELD_NUMBER: _ClassVar[int]
    total_processed: int
    total_failed: int
    success_rate: float
    def __init__(self, total_processed: _Optional[int] = ..., total_failed: _Optional[int] = ..., success_rate: _Optional[float] = ...) -> None: ...

class ProcessBatchResponse(_message.Message):
    __slots__ = ("progress", "item", "done", "error")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    progress: BatchProgress
    item: BatchItemResult
    done: BatchSummary
    error: _status_pb2.Status
    def __init__(self, progress: _Optional[_Union[BatchProgress, _Mapping]] = ..., item: _Optional[_Union[BatchItemResult, _Mapping]] = ..., done: _Optional[_Union[BatchSummary, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class ListToolsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Tool(_message.Message):
    __slots__ = ("name", "description", "input_schema", "source")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    input_schema: _struct_pb2.Struct
    source: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., source: _Optional[str] = ...) -> None: ...

class ListToolsResponse(_message.Message):
    __slots__ = ("tools", "count")
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[Tool]
    count: int
    def __init__(self, tools: _Optional[_Iterable[_Union[Tool, _Mapping]]] = ..., count: _Optional[int] = ...) -> None: ...

class ExecuteToolRequest(_message.Message):
    __slots__ = ("name", "input")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    name: str
    input: _struct_pb2.Struct
    def __init__(self, name: _Optional[str] = ..., input: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ExecuteToolResponse(_message.Message):
    __slots__ = ("success", "result")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result: _struct_pb2.Value
    def __init__(self, success: _Optional[bool] = ..., result: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...

class ChatMessage(_message.Message):
    __slots__ = ("role", "content", "create_time")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    role: str
    content: str
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, role: _Optional[str] = ..., content: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CheckTokensRequest(_message.Message):
    __slots__ = ("model", "system_prompt", "messages", "tools")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_PROMPT_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    model: str
    system_prompt: str
    messages: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    tools: _containers.RepeatedCompositeFieldContainer[Tool]
    def __init__(self, model: _Optional[str] = ..., system_prompt: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ..., tools: _Optional[_Iterable[_Union[Tool, _Mapping]]] = ...) -> None: ...

class CheckTokensResponse(_message.Message):
    __slots__ = ("allowed", "used", "available", "context_window", "utilization", "overflow", "recommendation")
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_WINDOW_FIELD_NUMBER: _ClassVar[int]
    UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    OVERFLOW_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDATION_FIELD_NUMBER: _ClassVar[int]
    allowed: bool
    used: int
    available: int
    context_window: int
    utilization: float
    overflow: int
    recommendation: str
    def __init__(self, allowed: _Optional[bool] = ..., used: _Optional[int] = ..., available: _Optional[int] = ..., context_window: _Optional[int] = ..., utilization: _Optional[float] = ..., overflow: _Optional[int] = ..., recommendation: _Optional[str] = ...) -> None: ...

class GetCostsRequest(_message.Message):
    __slots__ = ("period", "tenant")
    PERIOD_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    period: str
    tenant: str
    def __init__(self, period: _Optional[str] = ..., tenant: _Optional[str] = ...) -> None: ...

class CostBucket(_message.Message):
    __slots__ = ("cost", "requests")
    COST_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    cost: float
    requests: int
    def __init__(self, cost: _Optional[float] = ..., requests: _Optional[int] = ...) -> None: ...

class GetCostsResponse(_message.Message):
    __slots__ = ("period", "by_provider", "by_intent", "total_cost", "total_requests", "daily_budget", "monthly_budget", "daily_spent", "monthly_spent", "warning", "tenant", "tenant_daily_spent", "tenant_monthly_spent", "tenant_daily_budget", "tenant_monthly_budget", "tenant_total_cost", "tenant_total_requests")
    class ByProviderEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: CostBucket
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[CostBucket, _Mapping]] = ...) -> None: ...
    class ByIntentEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: CostBucket
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[CostBucket, _Mapping]] = ...) -> None: ...
    PERIOD_FIELD_NUMBER: _ClassVar[int]
    BY_PROVIDER_FIELD_NUMBER: _ClassVar[int]
    BY_INTENT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_COST_FIELD_NUMBER: _ClassVar[int]
    TOTAL_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    DAILY_BUDGET_FIELD_NUMBER: _ClassVar[int]
    MONTHLY_BUDGET_FIELD_NUMBER: _ClassVar[int]
    DAILY_SPENT_FIELD_NUMBER: _ClassVar[int]
    MONTHLY_SPENT_FIELD_NUMBER: _ClassVar[int]
    WARNING_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TENANT_DAILY_SPENT_FIELD_NUMBER: _ClassVar[int]
    TENANT_MONTHLY_SPENT_FIELD_NUMBER: _ClassVar[int]
    TENANT_DAILY_BUDGET_FIELD_NUMBER: _ClassVar[int]
    TENANT_MONTHLY_BUDGET_FIELD_NUMBER: _ClassVar[int]
    TENANT_TOTAL_COST_FIELD_NUMBER: _ClassVar[int]
    TENANT_TOTAL_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    period: str
    by_provider: _containers.MessageMap[str, CostBucket]
    by_intent: _containers.MessageMap[str, CostBucket]
    total_cost: float
    total_requests: int
    daily_budget: float
    monthly_budget: float
    daily_spent: float
    monthly_spent: float
    warning: bool
    tenant: str
    tenant_daily_spent: float
    tenant_monthly_spent: float
    tenant_daily_budget: float
    tenant_monthly_budget: float
    tenant_total_cost: float
    tenant_total_requests: int
    def __init__(self, period: _Optional[str] = ..., by_provider: _Optional[_Mapping[str, CostBucket]] = ..., by_intent: _Optional[_Mapping[str, CostBucket]] = ..., total_cost: _Optional[float] = ..., total_requests: _Optional[int] = ..., daily_budget: _Optional[float] = ..., monthly_budget: _Optional[float] = ..., daily_spent: _Optional[float] = ..., monthly_spent: _Optional[float] = ..., warning: _Optional[bool] = ..., tenant: _Optional[str] = ..., tenant_daily_spent: _Optional[float] = ..., tenant_monthly_spent: _Optional[float] = ..., tenant_daily_budget: _Optional[float] = ..., tenant_monthly_budget: _Optional[float] = ..., tenant_total_cost: _Optional[float] = ..., tenant_total_requests: _Optional[int] = ...) -> None: ...

class ListCircuitsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Circuit(_message.Message):
    __slots__ = ("name", "state", "failures", "successes", "total_failures", "opened_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    SUCCESSES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FAILURES_FIELD_NUMBER: _ClassVar[int]
    OPENED_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    state: CircuitState
    failures: int
    successes: int
    total_failures: int
    opened_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., state: _Optional[_Union[CircuitState, str]] = ..., failures: _Optional[int] = ..., successes: _Optional[int] = ..., total_failures: _Optional[int] = ..., opened_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListCircuitsResponse(_message.Message):
    __slots__ = ("circuits",)
    CIRCUITS_FIELD_NUMBER: _ClassVar[int]
    circuits: _containers.RepeatedCompositeFieldContainer[Circuit]
    def __init__(self, circuits: _Optional[_Iterable[_Union[Circuit, _Mapping]]] = ...) -> None: ...

class ListDeadLettersRequest(_message.Message):
    __slots__ = ("limit", "tenant")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    tenant: str
    def __init__(self, limit: _Optional[int] = ..., tenant: _Optional[str] = ...) -> None: ...

class DeadLetter(_message.Message):
    __slots__ = ("id", "operation", "payload", "last_error", "retry_count", "state", "create_time", "next_retry_time")
    ID_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    RETRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    NEXT_RETRY_TIME_FIELD_NUMBER: _ClassVar[int]
    id: str
    operation: str
    payload: _struct_pb2.Struct
    last_error: str
    retry_count: int
    state: str
    create_time: _timestamp_pb2.Timestamp
    next_retry_time: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., operation: _Optional[str] = ..., payload: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., last_error: _Optional[str] = ..., retry_count: _Optional[int] = ..., state: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., next_retry_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListDeadLettersResponse(_message.Message):
    __slots__ = ("messages", "parked", "retrying", "replayed")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    PARKED_FIELD_NUMBER: _ClassVar[int]
    RETRYING_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[DeadLetter]
    parked: int
    retrying: int
    replayed: int
    def __init__(self, messages: _Optional[_Iterable[_Union[DeadLetter, _Mapping]]] = ..., parked: _Optional[int] = ..., retrying: _Optional[int] = ..., replayed: _Optional[int] = ...) -> None: ...

class ReplayDeadLetterRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class ReplayDeadLetterResponse(_message.Message):
    __slots__ = ("message", "success")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    message: DeadLetter
    success: bool
    def __init__(self, message: _Optional[_Union[DeadLetter, _Mapping]] = ..., success: _Optional[bool] = ...) -> None: ...

class AddConversationMessageRequest(_message.Message):
    __slots__ = ("user_id", "document_id", "role", "content")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    document_id: str
    role: str
    content: str
    def __init__(self, user_id: _Optional[str] = ..., document_id: _Optional[str] = ..., role: _Optional[str] = ..., content: _Optional[str] = ...) -> None: ...

class AddConversationMessageResponse(_message.Message):
    __slots__ = ("message_count", "has_summary", "recent_messages")
    MESSAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    HAS_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    RECENT_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    message_count: int
    has_summary: bool
    recent_messages: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    def __init__(self, message_count: _Optional[int] = ..., has_summary: _Optional[bool] = ..., recent_messages: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ...) -> None: ...

class GetConversationRequest(_message.Message):
    __slots__ = ("user_id", "document_id")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    document_id: str
    def __init__(self, user_id: _Optional[str] = ..., document_id: _Optional[str] = ...) -> None: ...

class GetConversationResponse(_message.Message):
    __slots__ = ("message_count", "messages", "has_summary", "summary")
    MESSAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    HAS_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    message_count: int
    messages: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    has_summary: bool
    summary: str
    def __init__(self, message_count: _Optional[int] = ..., messages: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ..., has_summary: _Optional[bool] = ..., summary: _Optional[str] = ...) -> None: ...

class ClearConversationRequest(_message.Message):
    __slots__ = ("user_id", "document_id")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    document_id: str
    def __init__(self, user_id: _Optional[str] = ..., document_id: _Optional[str] = ...) -> None: ...

class ClearConversationResponse(_message.Message):
    __slots__ = ("success",)
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    success: bool
    def __init__(self, success: _Optional[bool] = ...) -> None: ...

class Conversation(_message.Message):
    __slots__ = ("conversation_id", "title", "document_ids", "turn_count", "create_time", "update_time", "subject")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    title: str
    document_ids: _containers.RepeatedScalarFieldContainer[str]
    turn_count: int
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    subject: str
    def __init__(self, conversation_id: _Optional[str] = ..., title: _Optional[str] = ..., document_ids: _Optional[_Iterable[str]] = ..., turn_count: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., subject: _Optional[str] = ...) -> None: ...

class ConversationTurn(_message.Message):
    __slots__ = ("turn_id", "question", "resolved_question", "answer", "create_time")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_QUESTION_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    question: str
    resolved_question: str
    answer: _answers_pb2.Answer
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, turn_id: _Optional[str] = ..., question: _Optional[str] = ..., resolved_question: _Optional[str] = ..., answer: _Optional[_Union[_answers_pb2.Answer, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListConversationsRequest(_message.Message):
    __slots__ = ("page_size",)
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    def __init__(self, page_size: _Optional[int] = ...) -> None: ...

class ListConversationsResponse(_message.Message):
    __slots__ = ("conversations",)
    CONVERSATIONS_FIELD_NUMBER: _ClassVar[int]
    conversations: _containers.RepeatedCompositeFieldContainer[Conversation]
    def __init__(self, conversations: _Optional[_Iterable[_Union[Conversation, _Mapping]]] = ...) -> None: ...

class CreateConversationRequest(_message.Message):
    __slots__ = ("title", "document_ids")
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    title: str
    document_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, title: _Optional[str] = ..., document_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class CreateConversationResponse(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ...) -> None: ...

class ReadConversationRequest(_message.Message):
    __slots__ = ("conversation_id",)
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    def __init__(self, conversation_id: _Optional[str] = ...) -> None: ...

class ReadConversationResponse(_message.Message):
    __slots__ = ("conversation", "turns")
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    turns: _containers.RepeatedCompositeFieldContainer[ConversationTurn]
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ..., turns: _Optional[_Iterable[_Union[ConversationTurn, _Mapping]]] = ...) -> None: ...

class RenameConversationRequest(_message.Message):
    __slots__ = ("conversation_id", "title")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    title: str
    def __init__(self, conversation_id: _Optional[str] = ..., title: _Optional[str] = ...) -> None: ...

class RenameConversationResponse(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ...) -> None: ...

class DeleteConversationRequest(_message.Message):
    __slots__ = ("conversation_id",)
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    def __init__(self, conversation_id: _Optional[str] = ...) -> None: ...

class DeleteConversationResponse(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    def __init__(self, deleted: _Optional[bool] = ...) -> None: ...

class AskConversationRequest(_message.Message):
    __slots__ = ("conversation_id", "question", "document_ids", "top_k")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    question: str
    document_ids: _containers.RepeatedScalarFieldContainer[str]
    top_k: int
    def __init__(self, conversation_id: _Optional[str] = ..., question: _Optional[str] = ..., document_ids: _Optional[_Iterable[str]] = ..., top_k: _Optional[int] = ...) -> None: ...

class ResolvedQuestion(_message.Message):
    __slots__ = ("question", "resolved", "rewritten", "explanation")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_FIELD_NUMBER: _ClassVar[int]
    REWRITTEN_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    question: str
    resolved: str
    rewritten: bool
    explanation: str
    def __init__(self, question: _Optional[str] = ..., resolved: _Optional[str] = ..., rewritten: _Optional[bool] = ..., explanation: _Optional[str] = ...) -> None: ...

class AskConversationResponse(_message.Message):
    __slots__ = ("conversation", "resolved", "answer_delta", "citation", "done", "error")
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_FIELD_NUMBER: _ClassVar[int]
    ANSWER_DELTA_FIELD_NUMBER: _ClassVar[int]
    CITATION_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    resolved: ResolvedQuestion
    answer_delta: str
    citation: _answers_pb2.Citation
    done: ConversationTurn
    error: _status_pb2.Status
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ..., resolved: _Optional[_Union[ResolvedQuestion, _Mapping]] = ..., answer_delta: _Optional[str] = ..., citation: _Optional[_Union[_answers_pb2.Citation, _Mapping]] = ..., done: _Optional[_Union[ConversationTurn, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class ListUserConversationsRequest(_message.Message):
    __slots__ = ("subject", "page_size")
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    subject: str
    page_size: int
    def __init__(self, subject: _Optional[str] = ..., page_size: _Optional[int] = ...) -> None: ...

class ListUserConversationsResponse(_message.Message):
    __slots__ = ("conversations",)
    CONVERSATIONS_FIELD_NUMBER: _ClassVar[int]
    conversations: _containers.RepeatedCompositeFieldContainer[Conversation]
    def __init__(self, conversations: _Optional[_Iterable[_Union[Conversation, _Mapping]]] = ...) -> None: ...

class ReadUserConversationRequest(_message.Message):
    __slots__ = ("subject", "conversation_id")
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    subject: str
    conversation_id: str
    def __init__(self, subject: _Optional[str] = ..., conversation_id: _Optional[str] = ...) -> None: ...

class ReadUserConversationResponse(_message.Message):
    __slots__ = ("conversation", "turns")
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    turns: _containers.RepeatedCompositeFieldContainer[ConversationTurn]
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ..., turns: _Optional[_Iterable[_Union[ConversationTurn, _Mapping]]] = ...) -> None: ...

class ModelServer(_message.Message):
    __slots__ = ("base_url", "model", "has_api_key", "context_window")
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    HAS_API_KEY_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_WINDOW_FIELD_NUMBER: _ClassVar[int]
    base_url: str
    model: str
    has_api_key: bool
    context_window: int
    def __init__(self, base_url: _Optional[str] = ..., model: _Optional[str] = ..., has_api_key: _Optional[bool] = ..., context_window: _Optional[int] = ...) -> None: ...

class GetModelServerRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetModelServerResponse(_message.Message):
    __slots__ = ("server", "configured", "source", "models", "problem")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    CONFIGURED_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FIELD_NUMBER: _ClassVar[int]
    server: ModelServer
    configured: bool
    source: str
    models: _containers.RepeatedScalarFieldContainer[str]
    problem: str
    def __init__(self, server: _Optional[_Union[ModelServer, _Mapping]] = ..., configured: _Optional[bool] = ..., source: _Optional[str] = ..., models: _Optional[_Iterable[str]] = ..., problem: _Optional[str] = ...) -> None: ...

class SetModelServerRequest(_message.Message):
    __slots__ = ("base_url", "model", "api_key", "context_window")
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_WINDOW_FIELD_NUMBER: _ClassVar[int]
    base_url: str
    model: str
    api_key: str
    context_window: int
    def __init__(self, base_url: _Optional[str] = ..., model: _Optional[str] = ..., api_key: _Optional[str] = ..., context_window: _Optional[int] = ...) -> None: ...

class SetModelServerResponse(_message.Message):
    __slots__ = ("server", "configured", "models")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    CONFIGURED_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    server: ModelServer
    configured: bool
    models: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, server: _Optional[_Union[ModelServer, _Mapping]] = ..., configured: _Optional[bool] = ..., models: _Optional[_Iterable[str]] = ...) -> None: ...

class GetHealthRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ServiceHealth(_message.Message):
    __slots__ = ("name", "status", "address", "latency_ms", "detail", "supervisor_state", "restarts", "last_exit")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    SUPERVISOR_STATE_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    LAST_EXIT_FIELD_NUMBER: _ClassVar[int]
    name: str
    status: str
    address: str
    latency_ms: float
    detail: str
    supervisor_state: str
    restarts: int
    last_exit: str
    def __init__(self, name: _Optional[str] = ..., status: _Optional[str] = ..., address: _Optional[str] = ..., latency_ms: _Optional[float] = ..., detail: _Optional[str] = ..., supervisor_state: _Optional[str] = ..., restarts: _Optional[int] = ..., last_exit: _Optional[str] = ...) -> None: ...

class GetHealthResponse(_message.Message):
    __slots__ = ("status", "services", "time", "embedding_model")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    status: str
    services: _containers.RepeatedCompositeFieldContainer[ServiceHealth]
    time: _timestamp_pb2.Timestamp
    embedding_model: EmbeddingModelHealth
    def __init__(self, status: _Optional[str] = ..., services: _Optional[_Iterable[_Union[ServiceHealth, _Mapping]]] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., embedding_model: _Optional[_Union[EmbeddingModelHealth, _Mapping]] = ...) -> None: ...

class EmbeddingModelHealth(_message.Message):
    __slots__ = ("identity", "runtime", "cpu_model", "cpu_flags", "vnni", "int8_path", "kernel_check", "kernel_min_cosine")
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    CPU_MODEL_FIELD_NUMBER: _ClassVar[int]
    CPU_FLAGS_FIELD_NUMBER: _ClassVar[int]
    VNNI_FIELD_NUMBER: _ClassVar[int]
    INT8_PATH_FIELD_NUMBER: _ClassVar[int]
    KERNEL_CHECK_FIELD_NUMBER: _ClassVar[int]
    KERNEL_MIN_COSINE_FIELD_NUMBER: _ClassVar[int]
    identity: str
    runtime: str
    cpu_model: str
    cpu_flags: _containers.RepeatedScalarFieldContainer[str]
    vnni: bool
    int8_path: str
    kernel_check: str
    kernel_min_cosine: float
    def __init__(self, identity: _Optional[str] = ..., runtime: _Optional[str] = ..., cpu_model: _Optional[str] = ..., cpu_flags: _Optional[_Iterable[str]] = ..., vnni: _Optional[bool] = ..., int8_path: _Optional[str] = ..., kernel_check: _Optional[str] = ..., kernel_min_cosine: _Optional[float] = ...) -> None: ...
