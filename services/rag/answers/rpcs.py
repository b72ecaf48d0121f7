"""gRPC transport of retrieval, grounded answers and the agent graph (a mixin of ``RagServicer``).

Methods map protobuf <-> the domain (``AnswerService``, ``AgentGraph``) and nothing more.
Validation lives in the domain: empty or over-long questions and out-of-range top_k are
INVALID_ARGUMENT with field violations; unknown document ids are NOT_FOUND.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from docuthinker.rag.v1 import rag_service_pb2 as pb
from services.rag.agents.graph import AgentGraph, AgentResult
from services.rag.answers import messages as msg
from services.rag.answers.answering import AnswerDelta, AnswerDone, AnswerService, CitationEvent, RetrievalEvent
from services.rag.retrieval import FusionMethod
from services.runtime.errors import FieldViolation, InvalidArgument
from services.runtime.request_context import current_tenant


class AnswerRpcs:
    answers: AnswerService
    agents: AgentGraph

    async def Search(self, request: pb.SearchRequest, context) -> pb.SearchResponse:
        if request.fusion and request.fusion not in FusionMethod._value2member_map_:
            raise InvalidArgument(f"unknown fusion method {request.fusion}",
                                  violations=[FieldViolation("fusion", "must be one of the FusionMethod values")])
        fusion = FusionMethod(request.fusion) if request.fusion else self.answers.retriever.config.default_fusion
        hits = await self.answers.search(current_tenant(), request.query, request.top_k, list(request.document_ids),
                                         fusion, request.expand_with_graph)
        return pb.SearchResponse(results=msg.scored_chunks_pb(hits), fusion=int(fusion))

    async def Query(self, request: pb.QueryRequest, context) -> pb.QueryResponse:
        answer = await self.answers.answer(current_tenant(), request.question, request.top_k,
                                           list(request.document_ids))
        return pb.QueryResponse(answer=msg.answer_pb(answer))

    async def StreamQuery(self, request: pb.StreamQueryRequest, context) -> AsyncIterator[pb.StreamQueryResponse]:
        events = self.answers.stream(current_tenant(), request.question, request.top_k, list(request.document_ids))
        async for event in events:
            if isinstance(event, RetrievalEvent):
                yield pb.StreamQueryResponse(retrieval=pb.RetrievalEvent(chunks=msg.scored_chunks_pb(event.chunks)))
            elif isinstance(event, AnswerDelta):
                yield pb.StreamQueryResponse(answer_delta=event.text)
            elif isinstance(event, CitationEvent):
                yield pb.StreamQueryResponse(citation=msg.citation_pb(event.citation))
            elif isinstance(event, AnswerDone):
                yield pb.StreamQueryResponse(done=msg.answer_pb(event.answer))

    async def AgentQuery(self, request: pb.AgentQueryRequest, context) -> pb.AgentQueryResponse:
        result = await self.agents.run(current_tenant(), request.question, request.top_k, list(request.document_ids))
        return msg.agent_response_pb(result)

    async def StreamAgentQuery(
        self, request: pb.StreamAgentQueryRequest, context
    ) -> AsyncIterator[pb.StreamAgentQueryResponse]:
        events = self.agents.stream(current_tenant(), request.question, request.top_k, list(request.document_ids))
        async for event in events:
            if isinstance(event, AgentResult):
                yield pb.StreamAgentQueryResponse(done=msg.agent_response_pb(event))
            else:
                yield pb.StreamAgentQueryResponse(node=msg.node_event_pb(event))
