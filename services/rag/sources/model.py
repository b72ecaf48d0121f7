"""Domain types of sources: the configurations, the stored source and its items, and the sync's errors."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from services.runtime.errors import DomainError, FailedPrecondition, NotFound, PermissionDenied, Unavailable


class SourceKind(StrEnum):
    FOLDER = "folder"
    IMAP = "imap"
    WEBDAV = "webdav"
    GIT = "git"


class SourceState(IntEnum):
    """Values equal the proto's ``SourceState``."""

    PENDING = 1
    RUNNING = 2
    OK = 3
    PARTIAL = 4
    FAILED = 5


class ImapSecurity(IntEnum):
    TLS = 1
    STARTTLS = 2
    NONE = 3


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def selects(self, path: str) -> bool:
        """Whether a relative path passes the include and exclude patterns (``fnmatch``: ``*`` spans folders)."""
        include: list[str] = getattr(self, "include", [])
        exclude: list[str] = getattr(self, "exclude", [])
        if include and not any(fnmatch.fnmatch(path, p) for p in include):
            return False
        return not any(fnmatch.fnmatch(path, p) for p in exclude)


_PRINTABLE = r"^[^\x00-\x1f\x7f]*$"


class FolderConfig(_Config):
    path: str = Field(min_length=1, max_length=4096, pattern=_PRINTABLE)
    include: list[str] = Field(default_factory=list, max_length=50)
    exclude: list[str] = Field(default_factory=list, max_length=50)
    poll_only: bool = False


class ImapConfig(_Config):
    host: str = Field(min_length=1, max_length=255, pattern=r"^[A-Za-z0-9.:\[\]_-]+$")
    port: int = Field(default=0, ge=0, le=65535)
    security: ImapSecurity = ImapSecurity.TLS
    username: str = Field(min_length=1, max_length=320)
    mailboxes: list[Annotated[str, Field(min_length=1, max_length=255, pattern=_PRINTABLE)]] = Field(
        default_factory=list, max_length=20)
    attachments_inline: bool = False

    @property
    def effective_port(self) -> int:
        return self.port or (993 if self.security is ImapSecurity.TLS else 143)


class WebDavConfig(_Config):
    url: str = Field(min_length=1, max_length=2048, pattern=r"^https?://[^\x00-\x20\x7f]+$")
    username: str = Field(default="", max_length=320)
    include: list[str] = Field(default_factory=list, max_length=50)
    exclude: list[str] = Field(default_factory=list, max_length=50)


class GitConfig(_Config):
    url: str = Field(min_length=1, max_length=2048, pattern=r"^[^\x00-\x20\x7f]+$")
    branch: str = Field(default="", max_length=255, pattern=r"^[A-Za-z0-9._/-]*$")
    username: str = Field(default="", max_length=320)
    include: list[str] = Field(default_factory=list, max_length=50)
    exclude: list[str] = Field(default_factory=list, max_length=50)


CONFIGS: dict[SourceKind, type[_Config]] = {
    SourceKind.FOLDER: FolderConfig, SourceKind.IMAP: ImapConfig, SourceKind.WEBDAV: WebDavConfig,
    SourceKind.GIT: GitConfig,
}


@dataclass(frozen=True)
class SyncCounts:
    seen: int = 0
    added: int = 0
    changed: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: int = 0


@dataclass(frozen=True)
class SourceRecord:
    """A stored source: its configuration (credential sealed) and where its syncs stand."""

    tenant: str
    source_id: str
    name: str
    kind: SourceKind
    config: dict[str, Any]
    create_time: float
    update_time: float
    secret: str = ""
    """The credential, sealed (``secrets.CredentialBox``); "" when none."""
    interval_s: int = 0
    paused: bool = False
    next_run: float = 0.0
    state: SourceState = SourceState.PENDING
    last_run_start: float | None = None
    last_run_end: float | None = None
    last_success: float | None = None
    counts: SyncCounts = field(default_factory=SyncCounts)
    error_reason: str = ""
    error_message: str = ""
    consecutive_failures: int = 0
    cursor: dict[str, Any] = field(default_factory=dict)
    requested: bool = False
    """A sync was asked for (now), to run even while the source is paused."""

    def typed_config(self) -> Any:
        return CONFIGS[self.kind].model_validate(self.config)


@dataclass(frozen=True)
class SourceItem:
    """One item of a source and the documents it became (a message and its attachments are several)."""

    tenant: str
    source_id: str
    key: str
    token: str
    content_sha256: str = ""
    document_ids: tuple[str, ...] = ()
    failed: bool = False
    attempts: int = 0
    next_attempt: float | None = None
    error_reason: str = ""
    error_message: str = ""
    update_time: float = 0.0


# -- the sync's errors ------------------------------------------------------------------------
class SourceAuthFailed(PermissionDenied):
    def __init__(self, message: str) -> None:
        super().__init__(message, reason="SOURCE_AUTH_FAILED")


class SourceUnreachable(Unavailable):
    def __init__(self, message: str) -> None:
        super().__init__(message, reason="SOURCE_UNREACHABLE")


class SourceMissing(NotFound):
    """The folder, mailbox, collection, repository or branch the source names does not exist."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason="SOURCE_NOT_FOUND")


class SourceRefused(FailedPrecondition):
    """The configuration is not allowed here (a folder outside the allowed roots, a disallowed URL)."""

    def __init__(self, message: str, reason: str = "SOURCE_NOT_ALLOWED") -> None:
        super().__init__(message, reason=reason)


RUN_ERRORS: tuple[type[DomainError], ...] = (SourceAuthFailed, SourceUnreachable, SourceMissing, SourceRefused)
"""Errors that stop a whole sync (the source, not one item, is at fault); it is retried with backoff."""
