"""The sources API in domain terms: create, read with status, list, update, delete, sync now.

Configurations are checked when they are stored (fields by their pydantic models, folders and file:// Git
URLs against the allowed roots), so a source that cannot ever run is refused with the field at fault rather
than failing later. The credential is sealed with the tenant's key before it is stored and never leaves the
service again.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic

from services.rag.catalog import DocumentCatalog
from services.rag.sources.connect import Connectors
from services.rag.sources.connectors.folder import allowed_folder
from services.rag.sources.connectors.git import check_url
from services.rag.sources.model import (
    CONFIGS,
    FolderConfig,
    GitConfig,
    SourceItem,
    SourceKind,
    SourceRecord,
)
from services.rag.sources.secrets import CredentialBox
from services.rag.sources.settings import SourcesSettings
from services.runtime.errors import DomainError, FieldViolation, InvalidArgument, NotFound

MAX_NAME = 200
DEFAULT_PAGE = 50
MAX_PAGE = 100
EDITABLE = ("name", "interval_seconds", "paused", "credential", "folder", "imap", "webdav", "git")


@dataclass(frozen=True)
class SourceDraft:
    """What a client sends: the fields of a source it may set (``credential`` in clear, once)."""

    name: str = ""
    kind: SourceKind | None = None
    config: dict[str, Any] | None = None
    interval_s: int = 0
    paused: bool = False
    credential: str = ""


@dataclass(frozen=True)
class SourceView:
    """A source with what its status shows beyond the row: failing items and the documents it keeps."""

    record: SourceRecord
    item_errors: tuple[SourceItem, ...]
    failing: int
    documents: int


def not_found(source_id: str) -> NotFound:
    return NotFound(f"source {source_id!r} not found", reason="SOURCE_NOT_FOUND", metadata={"source_id": source_id})


class SourceService:
    def __init__(self, store: Any, catalog: DocumentCatalog, box: CredentialBox, connectors: Connectors,
                 settings: SourcesSettings, wake: Callable[[], None] = lambda: None) -> None:
        self._store = store
        self._catalog = catalog
        self._box = box
        self._connectors = connectors
        self._settings = settings
        self._wake = wake

    # -- validation ----------------------------------------------------------------------------
    def _config(self, kind: SourceKind, config: dict[str, Any]) -> dict[str, Any]:
        field = kind.value
        try:
            typed = CONFIGS[kind].model_validate(config)
        except pydantic.ValidationError as exc:
            raise InvalidArgument(f"invalid {field} source configuration", reason="INVALID_SOURCE", violations=[
                FieldViolation(".".join(["source", field, *(str(p) for p in error["loc"])]), error["msg"])
                for error in exc.errors()]) from exc
        try:
            if isinstance(typed, FolderConfig):
                allowed_folder(typed.path, self._connectors.roots)
            if isinstance(typed, GitConfig):
                check_url(typed.url, self._connectors.roots)
            self._connectors.check_reach(kind, typed)
        except DomainError as exc:
            raise InvalidArgument(exc.message, reason=exc.reason,
                                  violations=[FieldViolation(f"source.{field}", exc.message)]) from exc
        return typed.model_dump(mode="json")

    def _interval(self, seconds: int) -> int:
        if seconds and not self._settings.min_interval_s <= seconds <= 366 * 86400:
            raise InvalidArgument(f"interval_seconds must be 0 (the default) or between {self._settings.min_interval_s}"
                                  " and a year", reason="INVALID_SOURCE",
                                  violations=[FieldViolation("source.interval_seconds", "out of range")])
        return seconds

    @staticmethod
    def _name(name: str) -> str:
        cleaned = name.strip()
        if not cleaned or len(cleaned) > MAX_NAME or any(ord(c) < 32 for c in cleaned):
            raise InvalidArgument(f"a source needs a name of 1 to {MAX_NAME} printable characters",
                                  reason="INVALID_SOURCE", violations=[FieldViolation("source.name", "required")])
        return cleaned

    # -- the API ---------------------------------------------------------------------------------
    async def create(self, tenant: str, draft: SourceDraft) -> SourceView:
        if draft.kind is None or draft.config is None:
            raise InvalidArgument("a source needs one of folder, imap, webdav or git", reason="INVALID_SOURCE",
                                  violations=[FieldViolation("source.config", "set folder, imap, webdav or git")])
        name = self._name(draft.name)
        config = self._config(draft.kind, draft.config)
        now = time.time()
        source_id = secrets.token_hex(8)
        record = SourceRecord(
            tenant=tenant, source_id=source_id, name=name, kind=draft.kind, config=config, create_time=now,
            update_time=now, secret=self._box.seal(tenant, source_id, draft.credential),
            interval_s=self._interval(draft.interval_s), paused=draft.paused, next_run=now, requested=not draft.paused)
        await asyncio.to_thread(self._store.create, record)
        self._wake()
        return await self.get(tenant, source_id)

    async def get(self, tenant: str, source_id: str) -> SourceView:
        record = await asyncio.to_thread(self._store.get, tenant, source_id)
        if record is None:
            raise not_found(source_id)
        errors, failing = await asyncio.to_thread(self._store.item_errors, tenant, source_id)
        documents = await asyncio.to_thread(self._store.document_count, tenant, source_id)
        return SourceView(record, tuple(errors), failing, documents)

    async def page(self, tenant: str, page_size: int, page_token: str) -> tuple[list[SourceView], str]:
        if page_size < 0:
            raise InvalidArgument("page_size must not be negative", reason="INVALID_PAGE_SIZE",
                                  violations=[FieldViolation("page_size", "must be >= 0")])
        size = min(page_size or DEFAULT_PAGE, MAX_PAGE)
        offset = _decode(page_token)
        records = await asyncio.to_thread(self._store.page, tenant, size + 1, offset)
        views = [await self.get(tenant, r.source_id) for r in records[:size]]
        return views, (_encode(offset + size) if len(records) > size else "")

    async def update(self, tenant: str, source_id: str, draft: SourceDraft, mask: Sequence[str]) -> SourceView:
        current = (await self.get(tenant, source_id)).record
        paths = list(mask) or [f for f, set_ in (
            ("name", bool(draft.name)), ("interval_seconds", bool(draft.interval_s)), ("paused", draft.paused),
            ("credential", bool(draft.credential)), (current.kind.value, draft.config is not None)) if set_]
        unknown = [p for p in paths if p not in EDITABLE]
        if unknown:
            raise InvalidArgument(f"update_mask names fields that cannot be changed: {', '.join(unknown)}",
                                  reason="INVALID_UPDATE_MASK",
                                  violations=[FieldViolation("update_mask", f"one of {', '.join(EDITABLE)}")])
        fields: dict[str, Any] = {}
        for path in paths:
            if path == "name":
                fields["name"] = self._name(draft.name)
            elif path == "interval_seconds":
                fields["interval_s"] = self._interval(draft.interval_s)
            elif path == "paused":
                fields["paused"] = draft.paused
            elif path == "credential":
                fields["secret"] = self._box.seal(tenant, source_id, draft.credential)
            elif path != current.kind.value or draft.kind not in (None, current.kind):
                raise InvalidArgument(f"a {current.kind.value} source stays one; create another source for "
                                      f"{path}", reason="INVALID_SOURCE",
                                      violations=[FieldViolation(f"source.{path}", "another kind of source")])
            else:
                fields["config"] = self._config(current.kind, draft.config or {})
        if fields:
            fields["update_time"] = time.time()
            if "config" in fields or "secret" in fields:  # try the new settings at once
                fields.update(next_run=time.time(), requested=True)
            if not await asyncio.to_thread(lambda: self._store.update(tenant, source_id, **fields)):
                raise not_found(source_id)
            self._wake()
        return await self.get(tenant, source_id)

    async def delete(self, tenant: str, source_id: str, keep_documents: bool) -> int:
        items = await asyncio.to_thread(self._store.delete, tenant, source_id)
        if items is None:
            raise not_found(source_id)
        deleted = 0
        if not keep_documents:
            for document_id in {d for item in items for d in item.document_ids}:
                try:
                    await self._catalog.delete(tenant, document_id)
                except NotFound:
                    continue  # deleted by hand meanwhile
                deleted += 1
        return deleted

    async def sync(self, tenant: str, source_id: str) -> SourceView:
        if not await asyncio.to_thread(self._store.request_sync, tenant, source_id):
            raise not_found(source_id)
        self._wake()
        return await self.get(tenant, source_id)


def _encode(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o{offset}".encode()).decode().rstrip("=")


def _decode(token: str) -> int:
    if not token:
        return 0
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        if not raw.startswith("o") or not raw[1:].isdigit():
            raise ValueError(raw)
        return int(raw[1:])
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidArgument("invalid page_token: pass the next_page_token of a previous response",
                              reason="INVALID_PAGE_TOKEN",
                              violations=[FieldViolation("page_token", "not a token issued by ListSources")]) from exc
