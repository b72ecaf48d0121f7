"""A small async client of the graph service, for the other services (ingestion, retrieval).

Open the channel with ``services.runtime.service_channel("graph", settings)``: it carries tenant,
request id and deadline, and retries UNAVAILABLE (the one retry layer). Failures come out as
domain errors: ``Unavailable`` when the graph service (or its backend) is down, so a caller can
record the sync and replay it later; the service's own status (INVALID_ARGUMENT, NOT_FOUND, ...)
otherwise, with its reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import grpc
from grpc_status import rpc_status
from google.rpc import error_details_pb2

from docuthinker.graph.v1 import graph_service_pb2 as pb
from docuthinker.graph.v1 import graph_service_pb2_grpc as pb_grpc
from services.graph.store import DeleteResult, EntityMention, EntityView, GraphStats, RelatedDocument
from services.graph.upsert_batching import UpsertSummary
from services.runtime.errors import DeadlineExceeded, DomainError, FieldViolation, Unavailable


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


def _domain_error(exc: grpc.aio.AioRpcError) -> DomainError:
    reason, metadata, violations = exc.code().name, {}, []
    status = rpc_status.from_call(exc)
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason, metadata = info.reason or reason, dict(info.metadata)
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            violations = [FieldViolation(v.field, v.description) for v in bad.field_violations]
    message = f"graph: {exc.details() or exc.code().name}"
    if exc.code() == grpc.StatusCode.UNAVAILABLE:
        return Unavailable(message, reason=reason, metadata=metadata)
    if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
        return DeadlineExceeded(message, reason=reason, metadata=metadata)
    return DomainError(message, reason, metadata, tuple(violations), exc.code())


class GraphClient:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._stub = pb_grpc.GraphServiceStub(channel)

    async def upsert_document(
        self,
        document_id: str,
        title: str = "",
        file_type: str = "",
        topics: Sequence[tuple[str, float]] = (),
        entities: Sequence[tuple[str, str, int]] = (),
    ) -> UpsertSummary:
        return await self.upsert_documents([DocumentUpsert(document_id, title, file_type, topics, entities)])

    async def upsert_documents(self, documents: Iterable[DocumentUpsert]) -> UpsertSummary:
        """Streams the documents in one call; the service batches them into transactions."""
        try:
            reply = await self._stub.UpsertDocumentFacts(_messages(documents))
        except grpc.aio.AioRpcError as exc:
            raise _domain_error(exc) from exc
        return UpsertSummary(reply.documents, reply.topics, reply.entities, reply.batches)

    async def delete_document(self, document_id: str) -> DeleteResult:
        try:
            reply = await self._stub.DeleteDocument(pb.DeleteDocumentRequest(document_id=document_id))
        except grpc.aio.AioRpcError as exc:
            raise _domain_error(exc) from exc
        return DeleteResult(reply.deleted, reply.orphans_removed)

    async def related(self, document_id: str, limit: int = 10) -> list[RelatedDocument]:
        try:
            reply = await self._stub.GetRelatedDocuments(
                pb.GetRelatedDocumentsRequest(document_id=document_id, limit=limit)
            )
        except grpc.aio.AioRpcError as exc:
            raise _domain_error(exc) from exc
        return [
            RelatedDocument(d.document_id, d.title, d.score, tuple(d.shared_topics), tuple(d.shared_entities))
            for d in reply.documents
        ]

    async def entity(self, name: str) -> EntityView:
        try:
            reply = await self._stub.GetEntity(pb.GetEntityRequest(name=name))
        except grpc.aio.AioRpcError as exc:
            raise _domain_error(exc) from exc
        return EntityView(
            reply.name, reply.type, tuple(EntityMention(m.document_id, m.title, m.count) for m in reply.documents)
        )

    async def stats(self) -> GraphStats:
        try:
            reply = await self._stub.GetGraphStats(pb.GetGraphStatsRequest())
        except grpc.aio.AioRpcError as exc:
            raise _domain_error(exc) from exc
        return GraphStats(reply.documents, reply.topics, reply.entities, reply.covers_edges, reply.mentions_edges)
