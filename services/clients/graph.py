"""The typed async client of the graph service, for the other services (ingestion, retrieval, tools).

Give it the caller's ``ChannelPool`` (or one channel): calls carry tenant, request id and
deadline, and the read-only ones are retried on UNAVAILABLE (the one retry layer). Failures
raise ``errors.remote_error``'s domain error with the service's status intact: code
UNAVAILABLE when the graph service (or its backend) is down, so a caller can record the sync
and replay it later; the service's own status (INVALID_ARGUMENT, NOT_FOUND, ...) otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from google.protobuf import json_format

from docuthinker.graph.v1 import graph_service_pb2 as pb
from docuthinker.graph.v1 import graph_service_pb2_grpc as pb_grpc
from services.clients.results import DeleteResult, EntityMention, EntityView, GraphStats, RelatedDocument, UpsertSummary
from services.runtime.clients import ServiceClient, tenant_metadata


@dataclass(frozen=True)
class DocumentUpsert:
    """One document's facts as a caller has them: ``topics`` (name, weight), ``entities`` (name, type, count)."""

    document_id: str
    title: str = ""
    file_type: str = ""
    topics: Sequence[tuple[str, float]] = field(default_factory=tuple)
    entities: Sequence[tuple[str, str, int]] = field(default_factory=tuple)


def _messages(documents: Iterable[DocumentUpsert]) -> Iterator[pb.UpsertDocumentFactsRequest]:
    for doc in documents:
        yield pb.UpsertDocumentFactsRequest(
            document=pb.DocumentNode(document_id=doc.document_id, title=doc.title, file_type=doc.file_type)
        )
        for name, weight in doc.topics:
            yield pb.UpsertDocumentFactsRequest(topic=pb.TopicFact(name=name, weight=float(weight)))
        for name, entity_type, count in doc.entities:
            yield pb.UpsertDocumentFactsRequest(entity=pb.EntityFact(name=name, type=entity_type, count=int(count)))


@dataclass(frozen=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    truncated: bool


class GraphApi(Protocol):
    async def upsert_documents(self, documents: Iterable[DocumentUpsert],
                               timeout: float | None = None) -> UpsertSummary: ...

    async def delete_document(self, document_id: str) -> DeleteResult: ...

    async def related(self, document_id: str, limit: int = 10, *, tenant: str | None = None) -> list[RelatedDocument]:
        ...

    async def entity(self, name: str) -> EntityView: ...

    async def stats(self) -> GraphStats: ...

    async def query(self, cypher: str, params: dict[str, Any] | None = None, limit: int = 0) -> QueryResult: ...


class GraphClient(ServiceClient):
    SERVICE = "graph"
    STUB = pb_grpc.GraphServiceStub

    async def upsert_document(
        self,
        document_id: str,
        title: str = "",
        file_type: str = "",
        topics: Sequence[tuple[str, float]] = (),
        entities: Sequence[tuple[str, str, int]] = (),
    ) -> UpsertSummary:
        return await self.upsert_documents([DocumentUpsert(document_id, title, file_type, topics, entities)])

    async def upsert_documents(self, documents: Iterable[DocumentUpsert],
                               timeout: float | None = None) -> UpsertSummary:
        """Streams the documents in one call; the service batches them into transactions."""
        reply = await self._unary("UpsertDocumentFacts", _messages(documents), timeout=timeout)
        return UpsertSummary(reply.documents, reply.topics, reply.entities, reply.batches)

    async def delete_document(self, document_id: str) -> DeleteResult:
        reply = await self._unary("DeleteDocument", pb.DeleteDocumentRequest(document_id=document_id))
        return DeleteResult(reply.deleted, reply.orphans_removed)

    async def related(self, document_id: str, limit: int = 10, *, tenant: str | None = None) -> list[RelatedDocument]:
        """``tenant``'s documents related to one of its documents (the caller's tenant when not named)."""
        request = pb.GetRelatedDocumentsRequest(document_id=document_id, limit=limit)
        reply = await self._unary("GetRelatedDocuments", request, metadata=tenant_metadata(tenant))
        return [
            RelatedDocument(d.document_id, d.title, d.score, tuple(d.shared_topics), tuple(d.shared_entities))
            for d in reply.documents
        ]

    async def entity(self, name: str) -> EntityView:
        reply = await self._unary("GetEntity", pb.GetEntityRequest(name=name))
        return EntityView(
            reply.name, reply.type, tuple(EntityMention(m.document_id, m.title, m.count) for m in reply.documents)
        )

    async def stats(self) -> GraphStats:
        reply = await self._unary("GetGraphStats", pb.GetGraphStatsRequest())
        return GraphStats(reply.documents, reply.topics, reply.entities, reply.covers_edges, reply.mentions_edges)

    async def query(self, cypher: str, params: dict[str, Any] | None = None, limit: int = 0) -> QueryResult:
        """Read-only Cypher; rows as JSON objects by column."""
        request = pb.QueryGraphRequest(cypher=cypher, limit=limit)
        request.params.update(params or {})
        reply = await self._unary("QueryGraph", request)
        return QueryResult(tuple(reply.columns), tuple(json_format.MessageToDict(row) for row in reply.rows),
                           reply.truncated)
