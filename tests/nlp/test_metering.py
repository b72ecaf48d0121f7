"""Each generative NLP response reports what its LLM calls cost, so the orchestrator can charge them.

The real servicer and domain code on a real port; the provider layer is a scripted fake at its
boundary that bills every call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from docuthinker.nlp.v1 import nlp_service_pb2 as pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as pb_grpc
from services.nlp.settings import NlpSettings
from services.providers.base import GenerationRequest, Usage
from services.runtime import MeshSettings

from .documents import MEMO
from .fakes import ScriptedGenerator
from .server import serve_nlp

pytestmark = pytest.mark.models  # the real spaCy pipeline

CALL = Usage(input_tokens=120, output_tokens=40, cache_read_tokens=10, cost_usd=0.002)


def _reply(task: str, request: GenerationRequest) -> str:
    if task in ("rewrite", "translate"):
        return "<text>Rewritten.</text>"
    return "Hello! I am a helpful assistant."  # unusable for points: the grounded fallback answers


@pytest.fixture
async def billed() -> AsyncIterator[tuple[pb_grpc.NlpServiceStub, ScriptedGenerator]]:
    generator = ScriptedGenerator(_reply, provider="anthropic", model="claude-haiku-4-5", usage=CALL)
    # No RAG (port 1): every request here carries its text.
    async with serve_nlp(MeshSettings(rag_port=1), NlpSettings(generation_window_chars=500), generator) as stub:
        yield stub, generator


def _totals(usage) -> list[tuple]:
    return [(u.provider, u.model, u.calls, u.input_tokens, u.output_tokens, u.cache_read_tokens,
             round(u.cost_usd, 9)) for u in usage]


async def test_every_window_of_a_rewrite_is_counted(billed):
    stub, generator = billed
    text = "\n\n".join(f"Paragraph {i} is written in a casual way, ok." for i in range(40))
    response = await stub.RewriteText(pb.RewriteTextRequest(text=text, style="formal"))
    windows = len(generator.calls)
    assert windows > 1
    assert _totals(response.llm_usage) == [
        ("anthropic", "claude-haiku-4-5", windows, 120 * windows, 40 * windows, 10 * windows, round(0.002 * windows, 9))
    ]


async def test_a_call_whose_output_was_rejected_is_still_reported(billed):
    stub, generator = billed
    response = await stub.GenerateDiscussionPoints(pb.GenerateDiscussionPointsRequest(text=MEMO))
    assert response.engine.model == "grounded-template"
    assert _totals(response.llm_usage) == [("anthropic", "claude-haiku-4-5", 1, 120, 40, 10, 0.002)]


async def test_analyze_reports_usage_per_operation(billed):
    stub, _ = billed
    events = [e async for e in stub.Analyze(pb.AnalyzeRequest(
        text=MEMO, operations=[pb.OPERATION_DISCUSSION_POINTS, pb.OPERATION_ANALYTICS]))]
    results = {e.result.operation: e.result for e in events if e.WhichOneof("event") == "result"}
    assert _totals(results[pb.OPERATION_DISCUSSION_POINTS].discussion_points.llm_usage) == [
        ("anthropic", "claude-haiku-4-5", 1, 120, 40, 10, 0.002)
    ]
    assert results[pb.OPERATION_ANALYTICS].WhichOneof("result") == "analytics"


async def test_requests_do_not_share_a_meter(billed):
    stub, _ = billed
    first, second = [await stub.TranslateText(pb.TranslateTextRequest(text="Hello there.", target_language="fr"))
                     for _ in range(2)]
    assert [u.calls for u in first.llm_usage] == [u.calls for u in second.llm_usage] == [1]


async def test_offline_results_report_no_usage(nlp_server):
    points = await nlp_server.stub.GenerateDiscussionPoints(pb.GenerateDiscussionPointsRequest(text=MEMO))
    summary = await nlp_server.stub.Summarize(pb.SummarizeRequest(text=MEMO))
    assert list(points.llm_usage) == list(summary.llm_usage) == []
    assert points.points  # the grounded fallback still answered
