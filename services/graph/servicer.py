"""gRPC transport of the graph service: maps protobuf to domain calls, nothing more."""

from __future__ import annotations

from docuthinker.graph.v1 import graph_service_pb2 as pb
from docuthinker.graph.v1 import graph_service_pb2_grpc as pb_grpc
from services.graph.knowledge_graph import KnowledgeGraph
from services.graph.query_params import from_struct, struct_row
from services.runtime.request_context import current_tenant


class GraphServicer(pb_grpc.GraphServiceServicer):
    def __init__(self, graph: KnowledgeGraph) -> None:
        self._graph = graph

    async def UpsertDocumentFacts(self, request_iterator, context) -> pb.UpsertDocumentFactsResponse:
        batcher = self._graph.upsert_batcher(current_tenant())
        async for message in request_iterator:
            which = message.WhichOneof("fact")
            if which == "document":
                doc = message.document
                await batcher.start_document(doc.document_id, doc.title, doc.file_type)
            elif which == "topic":
                batcher.add_topic(message.topic.name, message.topic.weight)
            elif which == "entity":
                batcher.add_entity(message.entity.name, message.entity.type, message.entity.count)
        summary = await batcher.finish()
        return pb.UpsertDocumentFactsResponse(
            documents=summary.documents, topics=summary.topics, entities=summary.entities, batches=summary.batches
        )

    async def DeleteDocument(self, request: pb.DeleteDocumentRequest, context) -> pb.DeleteDocumentResponse:
        result = await self._graph.delete_document(current_tenant(), request.document_id)
        return pb.DeleteDocumentResponse(deleted=result.deleted, orphans_removed=result.orphans_removed)

    async def QueryGraph(self, request: pb.QueryGraphRequest, context) -> pb.QueryGraphResponse:
        result = await self._graph.query(current_tenant(), request.cypher, from_struct(request.params), request.limit)
        return pb.QueryGraphResponse(
            columns=list(result.columns), rows=[struct_row(r) for r in result.rows], truncated=result.truncated
        )

    async def GetRelatedDocuments(
        self, request: pb.GetRelatedDocumentsRequest, context
    ) -> pb.GetRelatedDocumentsResponse:
        documents = await self._graph.related(current_tenant(), request.document_id, request.limit)
        return pb.GetRelatedDocumentsResponse(
            documents=[
                pb.RelatedDocument(
                    document_id=d.document_id, title=d.title, score=d.score,
                    shared_topics=list(d.shared_topics), shared_entities=list(d.shared_entities),
                )
                for d in documents
            ]
        )

    async def GetEntity(self, request: pb.GetEntityRequest, context) -> pb.GetEntityResponse:
        view = await self._graph.entity(current_tenant(), request.name)
        return pb.GetEntityResponse(
            name=view.name,
            type=view.type,
            documents=[
                pb.EntityMention(document_id=m.document_id, title=m.title, count=m.count) for m in view.documents
            ],
        )

    async def GetGraphStats(self, request: pb.GetGraphStatsRequest, context) -> pb.GetGraphStatsResponse:
        stats = await self._graph.stats(current_tenant())
        return pb.GetGraphStatsResponse(
            documents=stats.documents, topics=stats.topics, entities=stats.entities,
            covers_edges=stats.covers_edges, mentions_edges=stats.mentions_edges, backend=self._graph.backend,
        )
