"""Turns an upsert stream (document header, then its topics and entities, repeated) into batches.

Facts are resolved to canonical keys as they arrive (``entity_resolution``): the same topic
twice in one document keeps the larger weight, the same entity sums its mentions. A document
is complete when the next header or the end of the stream arrives; complete documents are
written in transactions of about ``batch_facts`` facts. Each transaction holds whole documents,
so a stream that fails midway leaves every document either fully replaced or untouched, and
re-sending the stream is safe (every write is an idempotent replace).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from services.clients.results import UpsertSummary
from services.graph.store import DocumentFacts, EntityFact, GraphStore, TopicFact
from services.runtime.errors import FieldViolation, InvalidArgument
from services.vocabulary.entity_resolution import MAX_ID_CHARS, MAX_NAME_CHARS, display_name, entity_key, topic_key


def _invalid(field_name: str, description: str, reason: str = "INVALID_FACT") -> InvalidArgument:
    return InvalidArgument(f"invalid {field_name}: {description}", reason=reason,
                           violations=[FieldViolation(field_name, description)])


@dataclass
class _OpenDocument:
    document_id: str
    title: str
    file_type: str
    topics: dict[str, TopicFact] = field(default_factory=dict)
    entities: dict[str, EntityFact] = field(default_factory=dict)

    def close(self) -> DocumentFacts:
        return DocumentFacts(
            self.document_id, self.title, self.file_type, tuple(self.topics.values()), tuple(self.entities.values())
        )


class UpsertBatcher:
    """Feeds one stream's facts to ``store`` for ``tenant``; call ``finish`` at the end of the stream."""

    def __init__(self, store: GraphStore, tenant: str, batch_facts: int, max_facts_per_document: int) -> None:
        self._store = store
        self._tenant = tenant
        self._batch_facts = batch_facts
        self._max_facts = max_facts_per_document
        self._open: _OpenDocument | None = None
        # Complete documents not yet written, by id: a restarted document replaces its earlier version.
        self._pending: dict[str, DocumentFacts] = {}
        self._pending_facts = 0
        self._summary = UpsertSummary()

    async def start_document(self, document_id: str, title: str, file_type: str) -> None:
        document_id = document_id.strip()
        if not document_id:
            raise _invalid("document.document_id", "must not be empty")
        if len(document_id) > MAX_ID_CHARS or not document_id.isprintable():
            raise _invalid("document.document_id", f"at most {MAX_ID_CHARS} printable characters")
        await self._close_open()
        self._open = _OpenDocument(document_id, display_name(title)[:MAX_NAME_CHARS], file_type.strip().lower()[:32])

    def add_topic(self, name: str, weight: float) -> None:
        document = self._current("topic")
        key = topic_key(name)
        if not key or len(name) > MAX_NAME_CHARS:
            raise _invalid("topic.name", f"needs a letter or digit, at most {MAX_NAME_CHARS} characters")
        if not math.isfinite(weight) or weight < 0:
            raise _invalid("topic.weight", "must be a finite number >= 0 (0 means unspecified, stored as 1)")
        weight = weight or 1.0
        known = document.topics.get(key)
        if known is None:
            self._check_size(document)
            document.topics[key] = TopicFact(key, display_name(name), weight)
        elif weight > known.weight:
            document.topics[key] = TopicFact(key, known.name, weight)

    def add_entity(self, name: str, entity_type: str, count: int) -> None:
        document = self._current("entity")
        key = entity_key(name)
        if not key or len(name) > MAX_NAME_CHARS:
            raise _invalid("entity.name", f"needs a letter or digit, at most {MAX_NAME_CHARS} characters")
        if count < 0:
            raise _invalid("entity.count", "must be >= 0 (0 means unspecified, stored as 1)")
        count = count or 1
        entity_type = entity_type.strip().upper()[:64]
        known = document.entities.get(key)
        if known is None:
            self._check_size(document)
            document.entities[key] = EntityFact(key, display_name(name), entity_type, count)
        else:
            document.entities[key] = EntityFact(key, known.name, known.type or entity_type, known.count + count)

    async def finish(self) -> UpsertSummary:
        await self._close_open()
        await self._flush()
        return self._summary

    def _current(self, kind: str) -> _OpenDocument:
        if self._open is None:
            raise _invalid(kind, "a document message must come before its topics and entities",
                           reason="FACT_WITHOUT_DOCUMENT")
        return self._open

    def _check_size(self, document: _OpenDocument) -> None:
        if len(document.topics) + len(document.entities) >= self._max_facts:
            raise InvalidArgument(
                f"document {document.document_id!r} has more than {self._max_facts} facts",
                reason="TOO_MANY_FACTS", metadata={"limit": str(self._max_facts)},
            )

    async def _close_open(self) -> None:
        if self._open is None:
            return
        facts = self._open.close()
        self._open = None
        previous = self._pending.pop(facts.document_id, None)
        if previous is not None:
            self._pending_facts -= previous.fact_count + 1
        self._pending[facts.document_id] = facts
        self._pending_facts += facts.fact_count + 1  # the document node is a write too
        if self._pending_facts >= self._batch_facts:
            await self._flush()

    async def _flush(self) -> None:
        if not self._pending:
            return
        batch = list(self._pending.values())
        await self._store.upsert(self._tenant, batch)
        self._summary = UpsertSummary(
            documents=self._summary.documents + len(batch),
            topics=self._summary.topics + sum(len(d.topics) for d in batch),
            entities=self._summary.entities + sum(len(d.entities) for d in batch),
            batches=self._summary.batches + 1,
        )
        self._pending.clear()
        self._pending_facts = 0
