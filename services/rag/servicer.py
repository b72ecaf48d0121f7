"""gRPC transport of the RAG service's documents API: protobuf <-> domain calls, nothing more.

Retrieval, answers and the agent graph come from ``AnswerRpcs``; the crew and the analysis
pipeline from ``AnalysisRpcs``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from google.api import httpbody_pb2

from docuthinker.rag.v1 import rag_service_pb2 as pb
from docuthinker.rag.v1 import rag_service_pb2_grpc as pb_grpc
from services.rag import messages, streamed_body
from services.rag.agents.graph import AgentGraph
from services.rag.analysis.pipeline import AnalysisPipeline
from services.rag.analysis.rpcs import AnalysisRpcs
from services.rag.answers.answering import AnswerService
from services.rag.answers.rpcs import AnswerRpcs
from services.rag.catalog import DocumentCatalog
from services.rag.crew import CrewRunner, DocumentInputs
from services.rag.documents import IngestOutcome
from services.rag.ingest.formats import check_size, detect_type, sanitize_filename
from services.rag.ingest.pipeline import IngestionPipeline
from services.rag.sources.rpcs import SourceRpcs
from services.rag.sources.service import SourceService
from services.rag.spoken import SpokenQuestions
from services.rag.spoken_rpcs import SpokenRpcs
from services.rag.versions.catalog import VersionCatalog
from services.rag.versions.changes import ChangeQuestions
from services.rag.versions.rpcs import VersionRpcs
from services.rag.viewing.rpcs import ViewingRpcs
from services.rag.viewing.span_boxes import SpanLocator
from services.runtime.errors import FieldViolation, InvalidArgument
from services.runtime.request_context import current_tenant


class RagServicer(VersionRpcs, SourceRpcs, AnswerRpcs, AnalysisRpcs, SpokenRpcs, ViewingRpcs,
                 pb_grpc.RagServiceServicer):
    """Built once its dependencies exist (``RagService.start``), so every RPC finds them."""

    def __init__(
        self,
        max_upload_bytes: int,
        *,
        pipeline: IngestionPipeline,
        catalog: DocumentCatalog,
        answers: AnswerService,
        agents: AgentGraph,
        spoken: SpokenQuestions,
        inputs: DocumentInputs,
        crew: CrewRunner,
        analysis: AnalysisPipeline,
        versions: VersionCatalog,
        changes: ChangeQuestions,
        sources: SourceService,
        locator: SpanLocator | None = None,
    ) -> None:
        self._max_upload_bytes = max_upload_bytes
        self.pipeline, self.catalog = pipeline, catalog
        self.versions, self.changes, self.sources = versions, changes, sources
        self.answers, self.agents, self.spoken = answers, agents, spoken
        self.inputs, self.crew, self.analysis = inputs, crew, analysis
        self.locator = locator or SpanLocator(None)

    # -- uploads ---------------------------------------------------------------------
    async def UploadDocument(self, request: pb.UploadDocumentRequest, context) -> AsyncIterator:
        events = self.pipeline.upload(current_tenant(), request.filename, request.file.content_type, request.file.data,
                                      key=request.document_key)
        async for event in events:
            yield messages.upload_event_pb(event, pb.UploadDocumentResponse)

    async def IngestDocument(self, request: pb.IngestDocumentRequest, context) -> pb.IngestDocumentResponse:
        events = self.pipeline.upload(current_tenant(), request.filename, request.file.content_type, request.file.data,
                                      key=request.document_key)
        async for event in events:
            if isinstance(event, IngestOutcome):
                return pb.IngestDocumentResponse(result=messages.result_pb(event))
        raise RuntimeError("ingestion ended without an outcome")

    async def UploadDocumentBody(self, request_iterator, context) -> AsyncIterator:
        first, content_type, data = await self._gather_upload(request_iterator)
        async for event in self.pipeline.upload(current_tenant(), first.filename, content_type, data,
                                                key=first.document_key):
            yield messages.upload_event_pb(event, pb.UploadDocumentBodyResponse)

    async def IngestDocumentBody(self, request_iterator, context) -> pb.IngestDocumentBodyResponse:
        first, content_type, data = await self._gather_upload(request_iterator)
        async for event in self.pipeline.upload(current_tenant(), first.filename, content_type, data,
                                                key=first.document_key):
            if isinstance(event, IngestOutcome):
                return pb.IngestDocumentBodyResponse(result=messages.result_pb(event))
        raise RuntimeError("ingestion ended without an outcome")

    async def _gather_upload(self, request_iterator):
        """A REST upload's pieces (``streamed_body``), its name and type checked before more bytes are read."""
        return await streamed_body.gather(
            request_iterator, "file", lambda size: check_size(size, self._max_upload_bytes),
            lambda first: detect_type(sanitize_filename(first.filename), first.file.content_type))

    async def StreamUploadDocument(self, request_iterator, context) -> AsyncIterator:
        header, data = await self._receive(request_iterator)
        events = self.pipeline.upload(current_tenant(), header.filename, header.content_type, data,
                                      key=header.document_key)
        async for event in events:
            yield messages.upload_event_pb(event, pb.StreamUploadDocumentResponse)

    async def _receive(self, request_iterator) -> tuple[pb.StreamUploadDocumentRequest.Header, bytes]:
        """Reads the header then the chunks, refusing as soon as the byte limit is passed."""
        header = None
        parts: list[bytes] = []
        received = 0
        async for message in request_iterator:
            kind = message.WhichOneof("part")
            if header is None:
                if kind != "header":
                    raise InvalidArgument("the first message must be the header", reason="HEADER_FIRST",
                                          violations=[FieldViolation("header", "send the header first")])
                header = message.header
                check_size(header.size_bytes, self._max_upload_bytes)
                detect_type(sanitize_filename(header.filename), header.content_type)  # refuse before the bytes
                continue
            if kind != "chunk":
                raise InvalidArgument("the header may be sent only once", reason="DUPLICATE_HEADER",
                                      violations=[FieldViolation("header", "only the first message")])
            received += len(message.chunk)
            check_size(received, self._max_upload_bytes)
            parts.append(message.chunk)
        if header is None:
            raise InvalidArgument("empty upload stream: send a header, then chunks", reason="HEADER_FIRST",
                                  violations=[FieldViolation("header", "required")])
        return header, b"".join(parts)

    # -- documents -------------------------------------------------------------------
    async def ListDocuments(self, request: pb.ListDocumentsRequest, context) -> pb.ListDocumentsResponse:
        page = await self.catalog.list(current_tenant(), request.page_size, request.page_token)
        return messages.page_pb(page)

    async def GetDocument(self, request: pb.GetDocumentRequest, context) -> pb.GetDocumentResponse:
        record = await self.catalog.get(current_tenant(), request.document_id)
        return pb.GetDocumentResponse(document=messages.document_pb(record))

    async def GetDocumentText(self, request: pb.GetDocumentTextRequest, context) -> pb.GetDocumentTextResponse:
        return messages.text_pb(await self.catalog.text(current_tenant(), request.document_id))

    async def GetDocumentContent(self, request: pb.GetDocumentContentRequest, context) -> httpbody_pb2.HttpBody:
        record, data = await self.catalog.content(current_tenant(), request.document_id)
        return httpbody_pb2.HttpBody(content_type=record.content_type or "application/octet-stream", data=data)

    async def DeleteDocument(self, request: pb.DeleteDocumentRequest, context) -> pb.DeleteDocumentResponse:
        removed = await self.catalog.delete(current_tenant(), request.document_id)
        return pb.DeleteDocumentResponse(document_id=request.document_id, chunks_removed=removed)

    async def ReindexDocument(self, request: pb.ReindexDocumentRequest, context) -> pb.ReindexDocumentResponse:
        await self.catalog.get(current_tenant(), request.document_id)
        record = await self.pipeline.reindex(current_tenant(), request.document_id)
        return pb.ReindexDocumentResponse(document=messages.document_pb(record))
