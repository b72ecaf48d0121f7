"""The statement sequences of an upsert batch and of a document delete, shared by both backends.

A plan is a generator: it yields ``Step``s (Cypher + parameters) and receives each step's rows
back, so later steps can depend on earlier results. ``run_sync`` (LadybugDB) and ``run_async``
(Bolt) drive it inside one transaction of their own; the sequence itself is written once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from services.clients.results import DeleteResult
from services.graph import statements as q
from services.graph.store import DocumentFacts
from services.runtime.errors import Internal

Rows = list[dict[str, Any]]
T = TypeVar("T")


@dataclass(frozen=True)
class Step:
    cypher: str
    params: dict[str, Any]


Plan = Generator[Step, Rows, T]


def upsert_plan(tenant: str, documents: Sequence[DocumentFacts], dialect: q.Dialect) -> Plan[None]:
    """MERGE the documents, replace their edges, then drop topics/entities nobody covers any more."""
    # The last version of a document wins, and each (document, key) pair is linked once.
    documents = list({d.document_id: d for d in documents}.values())
    if not documents:
        return
    ids = [d.document_id for d in documents]
    yield Step(
        q.UPSERT_DOCUMENTS,
        {
            "tenant": tenant,
            "docs": [{"id": d.document_id, "title": d.title, "file_type": d.file_type} for d in documents],
        },
    )
    old_topics = {r["key"] for r in (yield Step(q.DOCUMENT_TOPIC_KEYS, {"tenant": tenant, "ids": ids}))}
    old_entities = {r["key"] for r in (yield Step(q.DOCUMENT_ENTITY_KEYS, {"tenant": tenant, "ids": ids}))}
    yield Step(dialect.delete_covers, {"tenant": tenant, "ids": ids})
    yield Step(dialect.delete_mentions, {"tenant": tenant, "ids": ids})
    # Edges are re-created with CREATE, so one that survived the delete would be duplicated: refuse
    # the batch (its transaction rolls back) rather than corrupt the graph.
    remaining = yield Step(q.REMAINING_EDGES, {"tenant": tenant, "ids": ids})
    if remaining and remaining[0]["n"]:
        raise Internal(f"graph backend left {remaining[0]['n']} edges undeleted; batch rolled back")

    topics: dict[str, dict[str, str]] = {}
    entities: dict[str, dict[str, str]] = {}
    covers: dict[tuple[str, str], dict[str, Any]] = {}
    mentions: dict[tuple[str, str], dict[str, Any]] = {}
    for doc in documents:
        for topic in doc.topics:
            topics.setdefault(topic.key, {"key": topic.key, "name": topic.name})
            covers[doc.document_id, topic.key] = {
                "doc": doc.document_id, "key": topic.key, "weight": float(topic.weight)
            }
        for entity in doc.entities:
            known = entities.setdefault(entity.key, {"key": entity.key, "name": entity.name, "type": entity.type})
            if not known["type"]:
                known["type"] = entity.type
            mentions[doc.document_id, entity.key] = {
                "doc": doc.document_id, "key": entity.key, "count": int(entity.count)
            }
    # Empty lists are skipped: an embedded engine cannot infer the element type of [].
    if topics:
        yield Step(q.MERGE_TOPICS, {"tenant": tenant, "topics": list(topics.values())})
        yield Step(q.LINK_TOPICS, {"tenant": tenant, "covers": list(covers.values())})
    if entities:
        yield Step(q.MERGE_ENTITIES, {"tenant": tenant, "entities": list(entities.values())})
        yield Step(q.LINK_ENTITIES, {"tenant": tenant, "mentions": list(mentions.values())})
    yield from _remove_orphans(tenant, old_topics - topics.keys(), old_entities - entities.keys())


def delete_plan(tenant: str, document_id: str) -> Plan[DeleteResult]:
    found = yield Step(q.COUNT_DOCUMENT, {"tenant": tenant, "id": document_id})
    if not found or not found[0]["n"]:
        return DeleteResult(deleted=False, orphans_removed=0)
    topics = {r["key"] for r in (yield Step(q.DOCUMENT_TOPIC_KEYS, {"tenant": tenant, "ids": [document_id]}))}
    entities = {r["key"] for r in (yield Step(q.DOCUMENT_ENTITY_KEYS, {"tenant": tenant, "ids": [document_id]}))}
    yield Step(q.DETACH_DELETE_DOCUMENT, {"tenant": tenant, "id": document_id})
    removed = yield from _remove_orphans(tenant, topics, entities)
    return DeleteResult(deleted=True, orphans_removed=removed)


def _remove_orphans(tenant: str, topic_keys: set[str], entity_keys: set[str]) -> Plan[int]:
    removed = 0
    if topic_keys:
        orphans = [r["key"] for r in (yield Step(q.ORPHAN_TOPICS, {"tenant": tenant, "keys": sorted(topic_keys)}))]
        if orphans:
            yield Step(q.DELETE_TOPICS, {"tenant": tenant, "keys": orphans})
            removed += len(orphans)
    if entity_keys:
        orphans = [r["key"] for r in (yield Step(q.ORPHAN_ENTITIES, {"tenant": tenant, "keys": sorted(entity_keys)}))]
        if orphans:
            yield Step(q.DELETE_ENTITIES, {"tenant": tenant, "keys": orphans})
            removed += len(orphans)
    return removed


def run_sync(plan: Plan[T], run: Callable[[str, dict[str, Any]], Rows]) -> T:
    try:
        step = next(plan)
        while True:
            step = plan.send(run(step.cypher, step.params))
    except StopIteration as done:
        return done.value


async def run_async(plan: Plan[T], run: Callable[[str, dict[str, Any]], Awaitable[Rows]]) -> T:
    try:
        step = next(plan)
        while True:
            step = plan.send(await run(step.cypher, step.params))
    except StopIteration as done:
        return done.value
