import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ImapSecurity(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IMAP_SECURITY_UNSPECIFIED: _ClassVar[ImapSecurity]
    IMAP_SECURITY_TLS: _ClassVar[ImapSecurity]
    IMAP_SECURITY_STARTTLS: _ClassVar[ImapSecurity]
    IMAP_SECURITY_NONE: _ClassVar[ImapSecurity]

class SourceState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SOURCE_STATE_UNSPECIFIED: _ClassVar[SourceState]
    SOURCE_STATE_PENDING: _ClassVar[SourceState]
    SOURCE_STATE_RUNNING: _ClassVar[SourceState]
    SOURCE_STATE_OK: _ClassVar[SourceState]
    SOURCE_STATE_PARTIAL: _ClassVar[SourceState]
    SOURCE_STATE_FAILED: _ClassVar[SourceState]
IMAP_SECURITY_UNSPECIFIED: ImapSecurity
IMAP_SECURITY_TLS: ImapSecurity
IMAP_SECURITY_STARTTLS: ImapSecurity
IMAP_SECURITY_NONE: ImapSecurity
SOURCE_STATE_UNSPECIFIED: SourceState
SOURCE_STATE_PENDING: SourceState
SOURCE_STATE_RUNNING: SourceState
SOURCE_STATE_OK: SourceState
SOURCE_STATE_PARTIAL: SourceState
SOURCE_STATE_FAILED: SourceState

class Source(_message.Message):
    __slots__ = ("source_id", "name", "folder", "imap", "webdav", "git", "interval_seconds", "paused", "credential", "has_credential", "status", "create_time", "update_time")
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    FOLDER_FIELD_NUMBER: _ClassVar[int]
    IMAP_FIELD_NUMBER: _ClassVar[int]
    WEBDAV_FIELD_NUMBER: _ClassVar[int]
    GIT_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_FIELD_NUMBER: _ClassVar[int]
    HAS_CREDENTIAL_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    source_id: str
    name: str
    folder: FolderSource
    imap: ImapSource
    webdav: WebDavSource
    git: GitSource
    interval_seconds: int
    paused: bool
    credential: str
    has_credential: bool
    status: SourceStatus
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, source_id: _Optional[str] = ..., name: _Optional[str] = ..., folder: _Optional[_Union[FolderSource, _Mapping]] = ..., imap: _Optional[_Union[ImapSource, _Mapping]] = ..., webdav: _Optional[_Union[WebDavSource, _Mapping]] = ..., git: _Optional[_Union[GitSource, _Mapping]] = ..., interval_seconds: _Optional[int] = ..., paused: _Optional[bool] = ..., credential: _Optional[str] = ..., has_credential: _Optional[bool] = ..., status: _Optional[_Union[SourceStatus, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class FolderSource(_message.Message):
    __slots__ = ("path", "include", "exclude", "poll_only")
    PATH_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FIELD_NUMBER: _ClassVar[int]
    POLL_ONLY_FIELD_NUMBER: _ClassVar[int]
    path: str
    include: _containers.RepeatedScalarFieldContainer[str]
    exclude: _containers.RepeatedScalarFieldContainer[str]
    poll_only: bool
    def __init__(self, path: _Optional[str] = ..., include: _Optional[_Iterable[str]] = ..., exclude: _Optional[_Iterable[str]] = ..., poll_only: _Optional[bool] = ...) -> None: ...

class ImapSource(_message.Message):
    __slots__ = ("host", "port", "security", "username", "mailboxes", "attachments_inline")
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    SECURITY_FIELD_NUMBER: _ClassVar[int]
    USERNAME_FIELD_NUMBER: _ClassVar[int]
    MAILBOXES_FIELD_NUMBER: _ClassVar[int]
    ATTACHMENTS_INLINE_FIELD_NUMBER: _ClassVar[int]
    host: str
    port: int
    security: ImapSecurity
    username: str
    mailboxes: _containers.RepeatedScalarFieldContainer[str]
    attachments_inline: bool
    def __init__(self, host: _Optional[str] = ..., port: _Optional[int] = ..., security: _Optional[_Union[ImapSecurity, str]] = ..., username: _Optional[str] = ..., mailboxes: _Optional[_Iterable[str]] = ..., attachments_inline: _Optional[bool] = ...) -> None: ...

class WebDavSource(_message.Message):
    __slots__ = ("url", "username", "include", "exclude")
    URL_FIELD_NUMBER: _ClassVar[int]
    USERNAME_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FIELD_NUMBER: _ClassVar[int]
    url: str
    username: str
    include: _containers.RepeatedScalarFieldContainer[str]
    exclude: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, url: _Optional[str] = ..., username: _Optional[str] = ..., include: _Optional[_Iterable[str]] = ..., exclude: _Optional[_Iterable[str]] = ...) -> None: ...

class GitSource(_message.Message):
    __slots__ = ("url", "branch", "username", "include", "exclude")
    URL_FIELD_NUMBER: _ClassVar[int]
    BRANCH_FIELD_NUMBER: _ClassVar[int]
    USERNAME_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FIELD_NUMBER: _ClassVar[int]
    url: str
    branch: str
    username: str
    include: _containers.RepeatedScalarFieldContainer[str]
    exclude: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, url: _Optional[str] = ..., branch: _Optional[str] = ..., username: _Optional[str] = ..., include: _Optional[_Iterable[str]] = ..., exclude: _Optional[_Iterable[str]] = ...) -> None: ...

class SyncCounts(_message.Message):
    __slots__ = ("seen", "added", "changed", "unchanged", "deleted", "failed")
    SEEN_FIELD_NUMBER: _ClassVar[int]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    seen: int
    added: int
    changed: int
    unchanged: int
    deleted: int
    failed: int
    def __init__(self, seen: _Optional[int] = ..., added: _Optional[int] = ..., changed: _Optional[int] = ..., unchanged: _Optional[int] = ..., deleted: _Optional[int] = ..., failed: _Optional[int] = ...) -> None: ...

class SourceItemError(_message.Message):
    __slots__ = ("item", "reason", "message", "attempts", "next_attempt_time")
    ITEM_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_TIME_FIELD_NUMBER: _ClassVar[int]
    item: str
    reason: str
    message: str
    attempts: int
    next_attempt_time: _timestamp_pb2.Timestamp
    def __init__(self, item: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., attempts: _Optional[int] = ..., next_attempt_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class SourceStatus(_message.Message):
    __slots__ = ("state", "last_run_start_time", "last_run_end_time", "next_run_time", "last_run", "error_reason", "error_message", "item_errors", "failing_items", "documents", "last_success_time", "cursor", "consecutive_failures")
    STATE_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_START_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_END_TIME_FIELD_NUMBER: _ClassVar[int]
    NEXT_RUN_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_FIELD_NUMBER: _ClassVar[int]
    ERROR_REASON_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ITEM_ERRORS_FIELD_NUMBER: _ClassVar[int]
    FAILING_ITEMS_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    LAST_SUCCESS_TIME_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    CONSECUTIVE_FAILURES_FIELD_NUMBER: _ClassVar[int]
    state: SourceState
    last_run_start_time: _timestamp_pb2.Timestamp
    last_run_end_time: _timestamp_pb2.Timestamp
    next_run_time: _timestamp_pb2.Timestamp
    last_run: SyncCounts
    error_reason: str
    error_message: str
    item_errors: _containers.RepeatedCompositeFieldContainer[SourceItemError]
    failing_items: int
    documents: int
    last_success_time: _timestamp_pb2.Timestamp
    cursor: str
    consecutive_failures: int
    def __init__(self, state: _Optional[_Union[SourceState, str]] = ..., last_run_start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_run_end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., next_run_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_run: _Optional[_Union[SyncCounts, _Mapping]] = ..., error_reason: _Optional[str] = ..., error_message: _Optional[str] = ..., item_errors: _Optional[_Iterable[_Union[SourceItemError, _Mapping]]] = ..., failing_items: _Optional[int] = ..., documents: _Optional[int] = ..., last_success_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cursor: _Optional[str] = ..., consecutive_failures: _Optional[int] = ...) -> None: ...
