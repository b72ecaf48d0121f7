"""The NLP service over a real in-process gRPC server: every RPC, Analyze, errors, stored documents."""

from __future__ import annotations

import time

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from docuthinker.nlp.v1 import nlp_service_pb2 as pb

from .documents import MEMO, SOLAR

PARAGRAPH = "Tim Cook of Apple Inc. met Angela Merkel in Berlin on 5 March 2021 to discuss a $2 billion deal."


def _reason(error: grpc.aio.AioRpcError) -> str:
    status = rpc_status.from_call(error)
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return info.reason
    return ""


async def test_entities_rpc(nlp_server):
    response = await nlp_server.stub.ExtractEntities(pb.ExtractEntitiesRequest(text=PARAGRAPH, labels=["MONEY", "GPE"]))
    assert {(e.text, e.label) for e in response.entities} == {("$2 billion", "MONEY"), ("Berlin", "GPE")}
    money = next(e for e in response.entities if e.label == "MONEY")
    assert (money.mentions[0].start, money.mentions[0].end) == (PARAGRAPH.index("$2"), PARAGRAPH.index(" deal"))
    assert response.engine.provider == "spacy"


async def test_sentiment_rpc(nlp_server):
    response = await nlp_server.stub.AnalyzeSentiment(pb.AnalyzeSentimentRequest(text="What a wonderful, happy day!"))
    assert response.overall.label == pb.SENTIMENT_LABEL_POSITIVE and response.overall.score > 0.5
    assert response.sentences[0].end == len("What a wonderful, happy day!")


async def test_summary_rpc_bullets_within_limits(nlp_server):
    response = await nlp_server.stub.Summarize(
        pb.SummarizeRequest(text=SOLAR, style=pb.SUMMARY_STYLE_BULLETS, max_sentences=2, max_words=40)
    )
    assert response.style == pb.SUMMARY_STYLE_BULLETS and len(response.bullets) == len(response.sentences) <= 2
    for sentence in response.sentences:
        assert SOLAR[sentence.start : sentence.end] == sentence.text
    assert response.engine.model == "all-MiniLM-L6-v2-extractive"  # no LLM configured


async def test_key_ideas_topics_and_analytics_rpcs(nlp_server):
    ideas = await nlp_server.stub.ExtractKeyIdeas(pb.ExtractKeyIdeasRequest(text=SOLAR, max_ideas=3))
    assert len(ideas.ideas) == 3
    found = await nlp_server.stub.ExtractTopics(pb.ExtractTopicsRequest(text=SOLAR, max_topics=4))
    assert len(found.topics) == 4 and all(0 < t.weight <= 1 for t in found.topics)
    stats = await nlp_server.stub.ComputeAnalytics(pb.ComputeAnalyticsRequest(text="One two three. Four five.", top_keywords=1))
    assert (stats.words, stats.sentences, stats.paragraphs) == (5, 2, 1)
    assert len(stats.top_keywords) == 1 and stats.engine.model == "docuthinker-text-stats"


async def test_generative_rpcs_offline(nlp_server):
    points = await nlp_server.stub.GenerateDiscussionPoints(pb.GenerateDiscussionPointsRequest(text=MEMO))
    assert points.engine.model == "grounded-template" and all(p.endswith("?") for p in points.points)
    advice = await nlp_server.stub.GenerateRecommendations(pb.GenerateRecommendationsRequest(text=MEMO))
    assert advice.recommendations[0].priority == pb.PRIORITY_HIGH
    for call, request in (
        (nlp_server.stub.TranslateText, pb.TranslateTextRequest(text="Hello", target_language="fr")),
        (nlp_server.stub.RewriteText, pb.RewriteTextRequest(text="Hello", style="formal")),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call(request)
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "ANTHROPIC_API_KEY" in caught.value.details()


@pytest.mark.parametrize(
    ("request_", "code", "reason"),
    [
        (pb.SummarizeRequest(text=" \n "), grpc.StatusCode.INVALID_ARGUMENT, "EMPTY_TEXT"),
        (pb.SummarizeRequest(), grpc.StatusCode.INVALID_ARGUMENT, "MISSING_SOURCE"),
        (pb.SummarizeRequest(text="word " * 12_000), grpc.StatusCode.INVALID_ARGUMENT, "TEXT_TOO_LARGE"),
        (pb.SummarizeRequest(text=SOLAR, max_sentences=-2), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
    ],
)
async def test_input_errors(nlp_server, request_, code, reason):
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await nlp_server.stub.Summarize(request_)
    assert caught.value.code() == code and _reason(caught.value) == reason


async def test_analyze_streams_every_default_operation_then_done(nlp_server):
    seen: list[int] = []
    events = [e async for e in nlp_server.stub.Analyze(pb.AnalyzeRequest(text=SOLAR))]
    for event in events[:-1]:
        assert event.WhichOneof("event") == "result"
        assert event.result.WhichOneof("result") != "error", event.result.error
        seen.append(event.result.operation)
    assert events[-1].done == pb.AnalyzeDone(succeeded=7, failed=0)
    assert sorted(seen) == sorted(
        [pb.OPERATION_ENTITIES, pb.OPERATION_SENTIMENT, pb.OPERATION_SUMMARY, pb.OPERATION_BULLET_SUMMARY,
         pb.OPERATION_KEY_IDEAS, pb.OPERATION_TOPICS, pb.OPERATION_ANALYTICS]
    )
    bullets = next(e.result.summary for e in events[:-1] if e.result.operation == pb.OPERATION_BULLET_SUMMARY)
    assert bullets.style == pb.SUMMARY_STYLE_BULLETS and bullets.bullets


async def test_analyze_streams_each_result_as_it_completes(nlp_server):
    """Analytics (milliseconds) must arrive before the summary (embeddings) is done."""
    text = SOLAR + "\n\nA fresh paragraph about wind turbines keeps the embedding cache cold."
    arrivals: dict[int, float] = {}
    started = time.perf_counter()
    async for event in nlp_server.stub.Analyze(
        pb.AnalyzeRequest(text=text, operations=[pb.OPERATION_SUMMARY, pb.OPERATION_ANALYTICS])
    ):
        if event.WhichOneof("event") == "result":
            arrivals[event.result.operation] = time.perf_counter() - started
    assert list(arrivals) == [pb.OPERATION_ANALYTICS, pb.OPERATION_SUMMARY]


async def test_analyze_reports_a_failing_operation_in_band(nlp_server, monkeypatch):
    # No text makes the extractive summary fail any more (an overlong sentence is cut at row and word
    # boundaries), so the failure is injected where the summary is computed.
    from services.nlp import summarize
    from services.runtime.errors import InvalidArgument

    def refuse(*_args, **_kwargs):
        raise InvalidArgument("max_words=1 is below the shortest candidate sentence (3 words)")

    monkeypatch.setattr(summarize, "extractive", refuse)
    events = [
        e async for e in nlp_server.stub.Analyze(
            pb.AnalyzeRequest(text="The " + "very " * 300 + "end.",
                              operations=[pb.OPERATION_SUMMARY, pb.OPERATION_SENTIMENT])
        )
    ]
    results = {e.result.operation: e.result for e in events[:-1]}
    assert results[pb.OPERATION_SUMMARY].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert "max_words" in results[pb.OPERATION_SUMMARY].error.message
    assert results[pb.OPERATION_SENTIMENT].WhichOneof("result") == "sentiment"
    assert events[-1].done == pb.AnalyzeDone(succeeded=1, failed=1)


async def test_analyze_rejects_unknown_operations_before_streaming(nlp_server):
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for _ in nlp_server.stub.Analyze(pb.AnalyzeRequest(text=SOLAR, operations=[pb.OPERATION_UNSPECIFIED])):
            pass
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT and _reason(caught.value) == "UNKNOWN_OPERATION"


async def test_document_id_reads_the_text_from_rag_for_the_callers_tenant(nlp_server):
    nlp_server.rag.add("", tenant="acme", document_id="doc-1",
                       sections=["The food was excellent.", "The service was terrible and slow."])
    response = await nlp_server.stub.AnalyzeSentiment(
        pb.AnalyzeSentimentRequest(document_id="doc-1"), metadata=(("x-tenant-id", "acme"),)
    )
    assert [s.text for s in response.sentences] == ["The food was excellent.", "The service was terrible and slow."]
    assert nlp_server.rag.tenants[-1] == "acme"
    with pytest.raises(grpc.aio.AioRpcError) as caught:  # another tenant does not see it
        await nlp_server.stub.AnalyzeSentiment(pb.AnalyzeSentimentRequest(document_id="doc-1"))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND and _reason(caught.value) == "DOCUMENT_NOT_FOUND"


async def test_a_document_without_text_is_a_failed_precondition(nlp_server):
    nlp_server.rag.add("", tenant="default", document_id="scan", sections=["   "])
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await nlp_server.stub.ExtractEntities(pb.ExtractEntitiesRequest(document_id="scan"))
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION and _reason(caught.value) == "DOCUMENT_HAS_NO_TEXT"


async def test_rag_down_is_unavailable():
    from services.clients.rag import RagClient
    from services.nlp.sources import RagDocumentTexts
    from services.runtime import ChannelPool, MeshSettings
    from services.runtime.errors import Unavailable

    channels = ChannelPool(MeshSettings(rag_port=1, downstream_timeout_s=2))  # nobody listens on port 1
    documents = RagDocumentTexts(RagClient(channels))
    try:
        with pytest.raises(Unavailable) as caught:
            await documents.fetch("doc-1")
        assert caught.value.reason == "RAG_UNAVAILABLE"
    finally:
        await channels.close()
