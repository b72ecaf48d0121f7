"""Rows of sources and their items, the same on SQLite (``store``) and PostgreSQL (``pg_store``)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from services.rag.sources.model import SourceItem, SourceKind, SourceRecord, SourceState, SyncCounts

SOURCE_COLUMNS = (
    "source_id, tenant, name, kind, config, secret, interval_s, paused, create_time, update_time, next_run, "
    "requested, state, last_run_start, last_run_end, last_success, counts, error_reason, error_message, "
    "consecutive_failures, cursor"
)
SOURCE_VALUES = 21
ITEM_COLUMNS = (
    "source_id, item_key, tenant, token, content_sha256, document_ids, failed, attempts, next_attempt, "
    "error_reason, error_message, update_time"
)
ITEM_VALUES = 12
UPDATABLE = {"name", "config", "secret", "interval_s", "paused", "next_run", "update_time", "requested"}
"""What a client's update may change."""
FINISHED = {"state", "last_run_end", "last_success", "counts", "error_reason", "error_message",
            "consecutive_failures", "cursor", "next_run"}
"""What the end of a sync writes."""


def source_values(record: SourceRecord) -> tuple:
    return (record.source_id, record.tenant, record.name, record.kind.value, json.dumps(record.config),
            record.secret, record.interval_s, int(record.paused), record.create_time, record.update_time,
            record.next_run, int(record.requested), int(record.state), record.last_run_start, record.last_run_end,
            record.last_success, json.dumps(dataclasses.asdict(record.counts)), record.error_reason,
            record.error_message, record.consecutive_failures, json.dumps(record.cursor))


def source_from_row(row: Any) -> SourceRecord:
    return SourceRecord(
        tenant=row["tenant"], source_id=row["source_id"], name=row["name"], kind=SourceKind(row["kind"]),
        config=json.loads(row["config"]), create_time=row["create_time"], update_time=row["update_time"],
        secret=row["secret"], interval_s=row["interval_s"], paused=bool(row["paused"]), next_run=row["next_run"],
        state=SourceState(row["state"]), last_run_start=row["last_run_start"], last_run_end=row["last_run_end"],
        last_success=row["last_success"], counts=SyncCounts(**json.loads(row["counts"] or "{}")),
        error_reason=row["error_reason"], error_message=row["error_message"],
        consecutive_failures=row["consecutive_failures"], cursor=json.loads(row["cursor"] or "{}"),
        requested=bool(row["requested"]))


def item_values(item: SourceItem) -> tuple:
    return (item.source_id, item.key, item.tenant, item.token, item.content_sha256, json.dumps(list(item.document_ids)),
            int(item.failed), item.attempts, item.next_attempt, item.error_reason, item.error_message,
            item.update_time)


def item_from_row(row: Any) -> SourceItem:
    return SourceItem(
        tenant=row["tenant"], source_id=row["source_id"], key=row["item_key"], token=row["token"],
        content_sha256=row["content_sha256"], document_ids=tuple(json.loads(row["document_ids"])),
        failed=bool(row["failed"]), attempts=row["attempts"], next_attempt=row["next_attempt"],
        error_reason=row["error_reason"], error_message=row["error_message"], update_time=row["update_time"])


def column_value(name: str, value: Any) -> Any:
    """A field's stored form (JSON for mappings and counts, 0/1 for flags, the number of a state)."""
    if name in ("config", "cursor"):
        return json.dumps(value)
    if name == "counts":
        return json.dumps(dataclasses.asdict(value))
    if name in ("paused", "requested"):
        return int(value)
    if name == "state":
        return int(value)
    return value
