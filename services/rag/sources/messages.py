"""Protobuf <-> domain conversions of sources (mapping only; the credential is never mapped out)."""

from __future__ import annotations

from google.protobuf import json_format

from docuthinker.rag.v1 import sources_pb2
from services.rag.messages import timestamp_pb
from services.rag.sources.model import SourceKind
from services.rag.sources.service import SourceDraft, SourceView

_KINDS = {"folder": SourceKind.FOLDER, "imap": SourceKind.IMAP, "webdav": SourceKind.WEBDAV, "git": SourceKind.GIT}


def draft_from_pb(source: sources_pb2.Source) -> SourceDraft:
    which = source.WhichOneof("config")
    kind = _KINDS[which] if which else None
    config = None
    if which:
        config = json_format.MessageToDict(getattr(source, which), preserving_proto_field_name=True,
                                           use_integers_for_enums=True)
        if kind is SourceKind.IMAP and not config.get("security"):
            config.pop("security", None)  # unspecified: TLS
    return SourceDraft(name=source.name, kind=kind, config=config, interval_s=source.interval_seconds,
                       paused=source.paused, credential=source.credential)


def source_pb(view: SourceView) -> sources_pb2.Source:
    record = view.record
    message = sources_pb2.Source(
        source_id=record.source_id, name=record.name, interval_seconds=record.interval_s, paused=record.paused,
        has_credential=bool(record.secret), create_time=timestamp_pb(record.create_time),
        update_time=timestamp_pb(record.update_time))
    json_format.ParseDict(record.config, getattr(message, record.kind.value), ignore_unknown_fields=True)
    status = message.status
    status.state = int(record.state)
    counts = record.counts
    status.last_run.CopyFrom(sources_pb2.SyncCounts(seen=counts.seen, added=counts.added, changed=counts.changed,
                                                    unchanged=counts.unchanged, deleted=counts.deleted,
                                                    failed=counts.failed))
    for field, value in (("last_run_start_time", record.last_run_start), ("last_run_end_time", record.last_run_end),
                         ("last_success_time", record.last_success)):
        if value is not None:
            getattr(status, field).CopyFrom(timestamp_pb(value))
    if not record.paused or record.requested:
        status.next_run_time.CopyFrom(timestamp_pb(record.next_run))
    status.error_reason = record.error_reason
    status.error_message = record.error_message
    status.failing_items = view.failing
    status.documents = view.documents
    status.consecutive_failures = record.consecutive_failures
    status.cursor = ", ".join(f"{k}={v}" for k, v in sorted(record.cursor.items()) if v not in ("", None, {}))
    for item in view.item_errors:
        error = status.item_errors.add(item=item.key, reason=item.error_reason, message=item.error_message,
                                       attempts=item.attempts)
        if item.next_attempt is not None:
            error.next_attempt_time.CopyFrom(timestamp_pb(item.next_attempt))
    return message
