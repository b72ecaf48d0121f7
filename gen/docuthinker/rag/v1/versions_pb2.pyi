import datetime

from docuthinker.rag.v1 import documents_pb2 as _documents_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VersionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VERSION_STATE_UNSPECIFIED: _ClassVar[VersionState]
    VERSION_STATE_LIVE: _ClassVar[VersionState]
    VERSION_STATE_SUPERSEDED: _ClassVar[VersionState]
    VERSION_STATE_INGESTING: _ClassVar[VersionState]
    VERSION_STATE_FAILED: _ClassVar[VersionState]
VERSION_STATE_UNSPECIFIED: VersionState
VERSION_STATE_LIVE: VersionState
VERSION_STATE_SUPERSEDED: VersionState
VERSION_STATE_INGESTING: VersionState
VERSION_STATE_FAILED: VersionState

class DocumentVersion(_message.Message):
    __slots__ = ("version", "state", "filename", "file_type", "content_type", "content_sha256", "size_bytes", "page_count", "title", "chunk_count", "chunks_embedded", "chunks_reused", "create_time", "superseded_time", "error_message")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    FILE_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_SHA256_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    PAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNT_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_EMBEDDED_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_REUSED_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_TIME_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    version: int
    state: VersionState
    filename: str
    file_type: str
    content_type: str
    content_sha256: str
    size_bytes: int
    page_count: int
    title: str
    chunk_count: int
    chunks_embedded: int
    chunks_reused: int
    create_time: _timestamp_pb2.Timestamp
    superseded_time: _timestamp_pb2.Timestamp
    error_message: str
    def __init__(self, version: _Optional[int] = ..., state: _Optional[_Union[VersionState, str]] = ..., filename: _Optional[str] = ..., file_type: _Optional[str] = ..., content_type: _Optional[str] = ..., content_sha256: _Optional[str] = ..., size_bytes: _Optional[int] = ..., page_count: _Optional[int] = ..., title: _Optional[str] = ..., chunk_count: _Optional[int] = ..., chunks_embedded: _Optional[int] = ..., chunks_reused: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., superseded_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., error_message: _Optional[str] = ...) -> None: ...

class VersionPassage(_message.Message):
    __slots__ = ("version", "text", "provenance")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    version: int
    text: str
    provenance: _documents_pb2.Provenance
    def __init__(self, version: _Optional[int] = ..., text: _Optional[str] = ..., provenance: _Optional[_Union[_documents_pb2.Provenance, _Mapping]] = ...) -> None: ...

class PassageChange(_message.Message):
    __slots__ = ("kind", "before", "after", "removed_words", "added_words")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[PassageChange.Kind]
        KIND_ADDED: _ClassVar[PassageChange.Kind]
        KIND_REMOVED: _ClassVar[PassageChange.Kind]
        KIND_CHANGED: _ClassVar[PassageChange.Kind]
    KIND_UNSPECIFIED: PassageChange.Kind
    KIND_ADDED: PassageChange.Kind
    KIND_REMOVED: PassageChange.Kind
    KIND_CHANGED: PassageChange.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    REMOVED_WORDS_FIELD_NUMBER: _ClassVar[int]
    ADDED_WORDS_FIELD_NUMBER: _ClassVar[int]
    kind: PassageChange.Kind
    before: VersionPassage
    after: VersionPassage
    removed_words: _containers.RepeatedScalarFieldContainer[str]
    added_words: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, kind: _Optional[_Union[PassageChange.Kind, str]] = ..., before: _Optional[_Union[VersionPassage, _Mapping]] = ..., after: _Optional[_Union[VersionPassage, _Mapping]] = ..., removed_words: _Optional[_Iterable[str]] = ..., added_words: _Optional[_Iterable[str]] = ...) -> None: ...
