import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DocumentStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DOCUMENT_STATUS_UNSPECIFIED: _ClassVar[DocumentStatus]
    DOCUMENT_STATUS_PENDING: _ClassVar[DocumentStatus]
    DOCUMENT_STATUS_PARSING: _ClassVar[DocumentStatus]
    DOCUMENT_STATUS_CHUNKING: _ClassVar[DocumentStatus]
    DOCUMENT_STATUS_EMBEDDING: _ClassVar[DocumentStatus]
    DOCUMENT_STATUS_INDEXING: _ClassVar[DocumentStatus]
    DOCUMENT_STATUS_READY: _ClassVar[DocumentStatus]
    DOCUMENT_STATUS_FAILED: _ClassVar[DocumentStatus]

class GraphSyncStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GRAPH_SYNC_STATUS_UNSPECIFIED: _ClassVar[GraphSyncStatus]
    GRAPH_SYNC_STATUS_PENDING: _ClassVar[GraphSyncStatus]
    GRAPH_SYNC_STATUS_SYNCED: _ClassVar[GraphSyncStatus]
    GRAPH_SYNC_STATUS_DISABLED: _ClassVar[GraphSyncStatus]

class IngestStage(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INGEST_STAGE_UNSPECIFIED: _ClassVar[IngestStage]
    INGEST_STAGE_RECEIVED: _ClassVar[IngestStage]
    INGEST_STAGE_PARSED: _ClassVar[IngestStage]
    INGEST_STAGE_CHUNKED: _ClassVar[IngestStage]
    INGEST_STAGE_EMBEDDED: _ClassVar[IngestStage]
    INGEST_STAGE_INDEXED: _ClassVar[IngestStage]
    INGEST_STAGE_GRAPH_SYNCED: _ClassVar[IngestStage]
    INGEST_STAGE_OCR: _ClassVar[IngestStage]
    INGEST_STAGE_TRANSCRIBED: _ClassVar[IngestStage]
DOCUMENT_STATUS_UNSPECIFIED: DocumentStatus
DOCUMENT_STATUS_PENDING: DocumentStatus
DOCUMENT_STATUS_PARSING: DocumentStatus
DOCUMENT_STATUS_CHUNKING: DocumentStatus
DOCUMENT_STATUS_EMBEDDING: DocumentStatus
DOCUMENT_STATUS_INDEXING: DocumentStatus
DOCUMENT_STATUS_READY: DocumentStatus
DOCUMENT_STATUS_FAILED: DocumentStatus
GRAPH_SYNC_STATUS_UNSPECIFIED: GraphSyncStatus
GRAPH_SYNC_STATUS_PENDING: GraphSyncStatus
GRAPH_SYNC_STATUS_SYNCED: GraphSyncStatus
GRAPH_SYNC_STATUS_DISABLED: GraphSyncStatus
INGEST_STAGE_UNSPECIFIED: IngestStage
INGEST_STAGE_RECEIVED: IngestStage
INGEST_STAGE_PARSED: IngestStage
INGEST_STAGE_CHUNKED: IngestStage
INGEST_STAGE_EMBEDDED: IngestStage
INGEST_STAGE_INDEXED: IngestStage
INGEST_STAGE_GRAPH_SYNCED: IngestStage
INGEST_STAGE_OCR: IngestStage
INGEST_STAGE_TRANSCRIBED: IngestStage

class Document(_message.Message):
    __slots__ = ("document_id", "tenant", "filename", "file_type", "content_type", "status", "error_message", "size_bytes", "page_count", "sheet_names", "content_sha256", "chunk_count", "create_time", "update_time", "graph_sync", "title", "version", "document_key")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    FILE_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    PAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    SHEET_NAMES_FIELD_NUMBER: _ClassVar[int]
    CONTENT_SHA256_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNT_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    GRAPH_SYNC_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_KEY_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    tenant: str
    filename: str
    file_type: str
    content_type: str
    status: DocumentStatus
    error_message: str
    size_bytes: int
    page_count: int
    sheet_names: _containers.RepeatedScalarFieldContainer[str]
    content_sha256: str
    chunk_count: int
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    graph_sync: GraphSyncStatus
    title: str
    version: int
    document_key: str
    def __init__(self, document_id: _Optional[str] = ..., tenant: _Optional[str] = ..., filename: _Optional[str] = ..., file_type: _Optional[str] = ..., content_type: _Optional[str] = ..., status: _Optional[_Union[DocumentStatus, str]] = ..., error_message: _Optional[str] = ..., size_bytes: _Optional[int] = ..., page_count: _Optional[int] = ..., sheet_names: _Optional[_Iterable[str]] = ..., content_sha256: _Optional[str] = ..., chunk_count: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., graph_sync: _Optional[_Union[GraphSyncStatus, str]] = ..., title: _Optional[str] = ..., version: _Optional[int] = ..., document_key: _Optional[str] = ...) -> None: ...

class Provenance(_message.Message):
    __slots__ = ("document_id", "filename", "page", "sheet_name", "row_start", "row_end", "heading_path", "char_start", "char_end", "start_seconds", "end_seconds", "version")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SHEET_NAME_FIELD_NUMBER: _ClassVar[int]
    ROW_START_FIELD_NUMBER: _ClassVar[int]
    ROW_END_FIELD_NUMBER: _ClassVar[int]
    HEADING_PATH_FIELD_NUMBER: _ClassVar[int]
    CHAR_START_FIELD_NUMBER: _ClassVar[int]
    CHAR_END_FIELD_NUMBER: _ClassVar[int]
    START_SECONDS_FIELD_NUMBER: _ClassVar[int]
    END_SECONDS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    filename: str
    page: int
    sheet_name: str
    row_start: int
    row_end: int
    heading_path: _containers.RepeatedScalarFieldContainer[str]
    char_start: int
    char_end: int
    start_seconds: float
    end_seconds: float
    version: int
    def __init__(self, document_id: _Optional[str] = ..., filename: _Optional[str] = ..., page: _Optional[int] = ..., sheet_name: _Optional[str] = ..., row_start: _Optional[int] = ..., row_end: _Optional[int] = ..., heading_path: _Optional[_Iterable[str]] = ..., char_start: _Optional[int] = ..., char_end: _Optional[int] = ..., start_seconds: _Optional[float] = ..., end_seconds: _Optional[float] = ..., version: _Optional[int] = ...) -> None: ...

class IngestProgress(_message.Message):
    __slots__ = ("stage", "done", "total", "message")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    stage: IngestStage
    done: int
    total: int
    message: str
    def __init__(self, stage: _Optional[_Union[IngestStage, str]] = ..., done: _Optional[int] = ..., total: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class IngestResult(_message.Message):
    __slots__ = ("document", "duplicate", "chunks_embedded", "chunks_reused")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_EMBEDDED_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_REUSED_FIELD_NUMBER: _ClassVar[int]
    document: Document
    duplicate: bool
    chunks_embedded: int
    chunks_reused: int
    def __init__(self, document: _Optional[_Union[Document, _Mapping]] = ..., duplicate: _Optional[bool] = ..., chunks_embedded: _Optional[int] = ..., chunks_reused: _Optional[int] = ...) -> None: ...
