"""Protobuf <-> domain conversions for the crew and the analysis pipeline (mapping only)."""

from __future__ import annotations

from docuthinker.rag.v1 import answers_pb2
from docuthinker.rag.v1 import rag_service_pb2 as pb
from services.providers.base import Usage
from services.rag.analysis.model import AnalysisRequest, AnalysisResult, Step
from services.rag.answers.messages import citation_pb
from services.rag.crew import CrewResult


def usage_pb(usage: Usage) -> answers_pb2.Usage:
    return answers_pb2.Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                             cache_read_tokens=usage.cache_read_tokens, cache_write_tokens=usage.cache_write_tokens,
                             cost_usd=usage.cost_usd)


def crew_pb(result: CrewResult) -> pb.CrewAnalyzeResponse:
    return pb.CrewAnalyzeResponse(
        tasks=[
            pb.CrewTaskOutput(agent=t.agent, role=t.role, output=t.output,
                              engine=answers_pb2.Engine(provider=t.provider, model=t.model),
                              tools_used=list(t.tools_used), grounding=int(t.grounding),
                              citations=[citation_pb(c) for c in t.citations])
            for t in result.tasks
        ],
        final_output=result.final_output,
        usage=usage_pb(result.usage),
    )


def analysis_request(request: pb.AnalyzeDocumentRequest | pb.StreamAnalyzeDocumentRequest) -> AnalysisRequest:
    return AnalysisRequest(text=request.text, document_id=request.document_id, question=request.question,
                           translate_lang=request.translate_lang, sync_graph=request.sync_graph,
                           skip_crew=request.skip_crew)


def analysis_pb(result: AnalysisResult) -> pb.AnalyzeDocumentResponse:
    response = pb.AnalyzeDocumentResponse(
        document_id=result.document_id,
        overview=result.overview,
        topics=[t.name for t in result.topics],
        qa_answer=result.answer.answer,
        supporting_context=list(result.supporting_context),
        citations=[citation_pb(c) for c in result.answer.citations],
        steps_run=list(result.steps_run),
    )
    if result.sentiment is not None:
        s = result.sentiment
        response.sentiment.CopyFrom(pb.SentimentSummary(label=s.label, score=s.score, confidence=s.confidence))
    if result.translation is not None:
        response.translation = result.translation.text
    if result.translation_error is not None:
        response.translation_error.CopyFrom(result.translation_error.to_status_proto())
    if result.crew is not None:
        response.crew_analysis.CopyFrom(crew_pb(result.crew))
    if result.crew_error is not None:
        response.crew_error.CopyFrom(result.crew_error.to_status_proto())
    return response


def node_pb(step: Step) -> pb.AnalysisNodeEvent:
    return pb.AnalysisNodeEvent(node=step.node, summary=step.summary, duration_ms=step.duration_ms)
