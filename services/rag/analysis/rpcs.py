"""gRPC transport of the crew and the analysis pipeline (a mixin of ``RagServicer``).

Methods map protobuf <-> the domain (``CrewRunner``, ``AnalysisPipeline``) and nothing more.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from docuthinker.rag.v1 import rag_service_pb2 as pb
from services.rag.analysis import messages as msg
from services.rag.analysis.model import AnalysisResult
from services.rag.analysis.pipeline import AnalysisPipeline
from services.rag.crew import CrewRunner, DocumentInputs
from services.runtime.request_context import current_tenant


class AnalysisRpcs:
    inputs: DocumentInputs
    crew: CrewRunner
    analysis: AnalysisPipeline

    async def CrewAnalyze(self, request: pb.CrewAnalyzeRequest, context) -> pb.CrewAnalyzeResponse:
        tenant = current_tenant()
        document = await self.inputs.resolve(tenant, request.text, request.document_id)
        return msg.crew_pb(await self.crew.analyze(tenant, document.record, request.question))

    async def AnalyzeDocument(self, request: pb.AnalyzeDocumentRequest, context) -> pb.AnalyzeDocumentResponse:
        return msg.analysis_pb(await self.analysis.run(current_tenant(), msg.analysis_request(request)))

    async def StreamAnalyzeDocument(
        self, request: pb.StreamAnalyzeDocumentRequest, context
    ) -> AsyncIterator[pb.StreamAnalyzeDocumentResponse]:
        async for event in self.analysis.stream(current_tenant(), msg.analysis_request(request)):
            if isinstance(event, AnalysisResult):
                yield pb.StreamAnalyzeDocumentResponse(done=msg.analysis_pb(event))
            else:
                yield pb.StreamAnalyzeDocumentResponse(node=msg.node_pb(event.step))
