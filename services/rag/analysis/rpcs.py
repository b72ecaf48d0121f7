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
from services.runtime.errors import Unavailable
from services.runtime.request_context import current_tenant


class AnalysisRpcs:
    _analysis: AnalysisPipeline | None = None
    _crew: CrewRunner | None = None
    _inputs: DocumentInputs | None = None

    def attach_analysis(self, inputs: DocumentInputs, crew: CrewRunner, analysis: AnalysisPipeline) -> None:
        self._inputs, self._crew, self._analysis = inputs, crew, analysis

    async def close_analysis(self) -> None:
        if self._analysis is not None:
            await self._analysis.close()

    def _ready(self) -> tuple[DocumentInputs, CrewRunner, AnalysisPipeline]:
        if self._inputs is None or self._crew is None or self._analysis is None:
            raise Unavailable("the RAG service is still starting", reason="STARTING")
        return self._inputs, self._crew, self._analysis

    async def CrewAnalyze(self, request: pb.CrewAnalyzeRequest, context) -> pb.CrewAnalyzeResponse:
        inputs, crew, _ = self._ready()
        tenant = current_tenant()
        document = await inputs.resolve(tenant, request.text, request.document_id)
        return msg.crew_pb(await crew.analyze(tenant, document.record, request.question))

    async def AnalyzeDocument(self, request: pb.AnalyzeDocumentRequest, context) -> pb.AnalyzeDocumentResponse:
        _, _, analysis = self._ready()
        return msg.analysis_pb(await analysis.run(current_tenant(), msg.analysis_request(request)))

    async def StreamAnalyzeDocument(
        self, request: pb.StreamAnalyzeDocumentRequest, context
    ) -> AsyncIterator[pb.StreamAnalyzeDocumentResponse]:
        _, _, analysis = self._ready()
        async for event in analysis.stream(current_tenant(), msg.analysis_request(request)):
            if isinstance(event, AnalysisResult):
                yield pb.StreamAnalyzeDocumentResponse(done=msg.analysis_pb(event))
            else:
                yield pb.StreamAnalyzeDocumentResponse(node=msg.node_pb(event.step))
