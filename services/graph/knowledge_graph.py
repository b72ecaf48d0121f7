"""The graph service's domain: validation, tenant scoping, entity resolution and limits over a GraphStore.

Every operation takes the caller's tenant (the servicer reads it from the request context) and passes it to the store;
nothing here knows protobuf or gRPC (the servicer maps those).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.clients.results import DeleteResult, EntityView, GraphStats, RelatedDocument
from services.graph.cypher_guard import check_read_only
from services.graph.query_cost import check_generated_items
from services.graph.query_params import validate_params
from services.graph.query_sizes import check_value_sizes
from services.graph.settings import GraphSettings
from services.graph.store import GraphStore, QueryResult
from services.graph.upsert_batching import UpsertBatcher
from services.runtime import request_context
from services.runtime.errors import DeadlineExceeded, FieldViolation, InvalidArgument, NotFound
from services.vocabulary.entity_resolution import MAX_ID_CHARS, entity_key

DEFAULT_RELATED = 10
MAX_RELATED = 100
MAX_ENTITY_DOCUMENTS = 1000


def _document_id(document_id: str) -> str:
    document_id = document_id.strip()
    if not document_id or len(document_id) > MAX_ID_CHARS:
        raise InvalidArgument(
            "document_id is required", reason="INVALID_DOCUMENT_ID",
            violations=[FieldViolation("document_id", f"1 to {MAX_ID_CHARS} characters")],
        )
    return document_id


class KnowledgeGraph:
    def __init__(self, store: GraphStore, settings: GraphSettings) -> None:
        self.store = store
        self._settings = settings

    @property
    def backend(self) -> str:
        return self.store.backend

    def upsert_batcher(self, tenant: str) -> UpsertBatcher:
        return UpsertBatcher(
            self.store, tenant, self._settings.upsert_batch_facts, self._settings.max_facts_per_document
        )

    async def delete_document(self, tenant: str, document_id: str) -> DeleteResult:
        return await self.store.delete_document(tenant, _document_id(document_id))

    async def related(self, tenant: str, document_id: str, limit: int = 0) -> list[RelatedDocument]:
        if limit < 0:
            raise InvalidArgument("limit must be >= 0", violations=[FieldViolation("limit", "must be >= 0")])
        document_id = _document_id(document_id)
        documents = await self.store.related(tenant, document_id, min(limit or DEFAULT_RELATED, MAX_RELATED))
        if documents is None:
            raise NotFound(f"document {document_id!r} is not in the graph", reason="DOCUMENT_NOT_FOUND",
                           metadata={"document_id": document_id})
        return documents

    async def entity(self, tenant: str, name: str) -> EntityView:
        key = entity_key(name)
        if not key:
            raise InvalidArgument("entity name is empty", reason="INVALID_ENTITY_NAME",
                                  violations=[FieldViolation("name", "needs a letter or digit")])
        view = await self.store.entity(tenant, key, MAX_ENTITY_DOCUMENTS)
        if view is None:
            raise NotFound(f"no entity named {name!r}", reason="ENTITY_NOT_FOUND", metadata={"name": name})
        return view

    async def stats(self, tenant: str) -> GraphStats:
        return await self.store.stats(tenant)

    async def query(self, tenant: str, cypher: str, params: Mapping[str, Any], limit: int = 0) -> QueryResult:
        if limit < 0:
            raise InvalidArgument("limit must be >= 0", violations=[FieldViolation("limit", "must be >= 0")])
        checked = check_read_only(cypher, self._settings.query_max_chars)
        typed = validate_params(params, checked.parameters)
        check_generated_items(checked.cypher, typed, self._settings.query_max_range_items)
        check_value_sizes(checked.cypher, typed, self._settings.query_max_value_items,
                          self._settings.ladybug_buffer_pool_mb * 1024 * 1024 // 8)
        rows = min(limit or self._settings.query_default_rows, self._settings.query_max_rows)
        return await self.store.query(tenant, checked.cypher, typed, rows, self._query_timeout())

    def _query_timeout(self) -> float:
        timeout = self._settings.query_timeout_s
        ctx = request_context.current()
        remaining = ctx.time_remaining() if ctx is not None else None
        if remaining is not None:
            if remaining <= 0.01:
                raise DeadlineExceeded("no time left for the query", reason="DEADLINE_EXCEEDED")
            timeout = min(timeout, remaining)
        return timeout
