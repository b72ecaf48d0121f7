"""gRPC transport of document versions (a mixin of ``RagServicer``): list, content, text, compare; and the
hook that answers "what changed" questions from a comparison before the ordinary answer engine runs."""

from __future__ import annotations

from collections.abc import AsyncIterator

from google.api import httpbody_pb2

from docuthinker.rag.v1 import rag_service_pb2 as pb
from services.rag.answers import messages as msg
from services.rag.answers.rpcs import AnswerRpcs
from services.rag.retrieval import RetrievedChunk
from services.rag.versions import messages
from services.rag.versions.catalog import VersionCatalog
from services.rag.versions.changes import ChangeQuestions
from services.runtime.request_context import current_tenant


class VersionRpcs(AnswerRpcs):
    versions: VersionCatalog
    changes: ChangeQuestions

    async def ListDocumentVersions(self, request: pb.ListDocumentVersionsRequest,
                                   context) -> pb.ListDocumentVersionsResponse:
        record, versions = await self.versions.versions(current_tenant(), request.document_id)
        return messages.versions_pb(record, versions)

    async def GetDocumentVersionContent(self, request: pb.GetDocumentVersionContentRequest,
                                        context) -> httpbody_pb2.HttpBody:
        version, data = await self.versions.content(current_tenant(), request.document_id, request.version)
        return httpbody_pb2.HttpBody(content_type=version.content_type or "application/octet-stream", data=data)

    async def GetDocumentVersionText(self, request: pb.GetDocumentVersionTextRequest,
                                     context) -> pb.GetDocumentVersionTextResponse:
        version, sections = await self.versions.text(current_tenant(), request.document_id, request.version)
        return messages.version_text_pb(version, sections)

    async def CompareDocumentVersions(self, request: pb.CompareDocumentVersionsRequest,
                                      context) -> pb.CompareDocumentVersionsResponse:
        tenant = current_tenant()
        comparison = await self.versions.compare(tenant, request.document_id, getattr(request, "from"), request.to)
        _, versions = await self.versions.versions(tenant, request.document_id)
        return messages.comparison_pb(comparison, {v.version: v.filename for v in versions})

    # -- "what changed" questions, answered from the comparison -----------------------------------
    async def _changes(self, question: str, top_k: int, document_ids: list[str]):
        """The comparison's answer to a "what changed" question about a document's versions, else None."""
        request = self.answers.validate(question, top_k, document_ids)  # the same refusals as any question
        return await self.changes.answer(current_tenant(), request.question, list(request.document_ids))

    async def Query(self, request: pb.QueryRequest, context) -> pb.QueryResponse:
        answer = await self._changes(request.question, request.top_k, list(request.document_ids))
        if answer is None:
            return await super().Query(request, context)
        return pb.QueryResponse(answer=msg.answer_pb(answer))

    async def StreamQuery(self, request: pb.StreamQueryRequest, context) -> AsyncIterator[pb.StreamQueryResponse]:
        answer = await self._changes(request.question, request.top_k, list(request.document_ids))
        if answer is None:
            async for event in super().StreamQuery(request, context):
                yield event
            return
        chunks: list[RetrievedChunk] = list(answer.retrieved)
        yield pb.StreamQueryResponse(retrieval=pb.RetrievalEvent(chunks=msg.scored_chunks_pb(chunks)))
        yield pb.StreamQueryResponse(answer_delta=answer.answer)
        for citation in answer.citations:
            yield pb.StreamQueryResponse(citation=msg.citation_pb(citation))
        yield pb.StreamQueryResponse(done=msg.answer_pb(answer))
