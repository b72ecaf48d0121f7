"""The analysis pipeline graph with fakes at its gRPC and provider boundaries.

Real: the LangGraph pipeline, ``DocumentInputs``, validation and the protobuf mapping. Faked:
ingestion/catalog (ports), the NLP client (the gRPC boundary), the answer engine and the crew
(whose own tests drive CrewAI and the router).
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import grpc
import pytest

from docuthinker.rag.v1 import rag_service_pb2 as pb
from services.providers.base import Usage
from services.rag.analysis.messages import analysis_pb, analysis_request, node_pb
from services.rag.analysis.model import AnalysisRequest, AnalysisResult
from services.rag.analysis.nlp import Engine, Sentiment, Summary, Translation
from services.rag.analysis.pipeline import AnalysisPipeline, NodeEvent
from services.rag.analysis.settings import AnalysisSettings
from services.rag.analysis.setup import build_analysis
from services.rag.answers.answering import AnswerService
from services.rag.answers.model import Citation, GroundedAnswer, SupportStatus
from services.rag.answers.settings import AnswerSettings
from services.rag.crew import CrewResult, CrewSettings, CrewTaskResult, DocumentInputs, Topic
from services.rag.crew.grounding import Verdict
from services.rag.documents import DocumentRecord, DocumentStatus, DocumentText, GraphSyncState, IngestOutcome, Section
from services.rag.retrieval import RetrievedChunk
from services.runtime.errors import DeadlineExceeded, DomainError, FailedPrecondition, InvalidArgument, NotFound
from tests.support import records

from .fakes import PASSAGES, chunk

TEXT = "\n".join(PASSAGES)
SUMMARY = Summary(" ".join(PASSAGES[1:3]), PASSAGES[1:3], Engine("local", "extractive"))


def make_record(document_id: str = "doc-1", graph: GraphSyncState = GraphSyncState.PENDING) -> DocumentRecord:
    return records.document(TEXT, document_id=document_id, filename="text-abc.txt", content_sha256="sha",
                            status=DocumentStatus.READY, chunk_count=2, graph_sync=graph)


class FakeLibrary:
    """Uploads + Documents: one tenant's stored documents; uploads are deduplicated by content."""

    def __init__(self) -> None:
        self.records: dict[str, DocumentRecord] = {}
        self.uploads: list[tuple[str, str, bytes]] = []
        self.graph_after: dict[str, int] = {}
        """Reads of a document before its graph state turns SYNCED (the worker's delay)."""

    async def upload(self, tenant: str, filename: str, content_type: str, data: bytes):
        self.uploads.append((tenant, filename, data))
        duplicate = "doc-1" in self.records
        self.records.setdefault("doc-1", make_record())
        yield IngestOutcome(self.records["doc-1"], duplicate=duplicate)

    async def get(self, tenant: str, document_id: str) -> DocumentRecord:
        if document_id not in self.records:
            raise NotFound(f"document {document_id!r} not found", reason="DOCUMENT_NOT_FOUND")
        left = self.graph_after.get(document_id)
        if left is not None:
            self.graph_after[document_id] = left - 1
            if left <= 0:
                self.records[document_id] = make_record(document_id, GraphSyncState.SYNCED)
        return self.records[document_id]

    async def text(self, tenant: str, document_id: str) -> DocumentText:
        return DocumentText(await self.get(tenant, document_id), (Section(TEXT, page=1),))


class FakeNlp:
    def __init__(self, translate_error: Exception | None = None) -> None:
        self.translate_error = translate_error
        self.calls: list[str] = []

    async def summarize(self, text: str, max_sentences: int) -> Summary:
        self.calls.append("summarize")
        return SUMMARY

    async def topics(self, text: str, limit: int) -> list[Topic]:
        self.calls.append("topics")
        return [Topic("turbine blades", 0.9), Topic("corrosion", 0.7)][:limit]

    async def sentiment(self, text: str) -> Sentiment:
        self.calls.append("sentiment")
        return Sentiment("negative", -0.2, 0.4)

    async def translate(self, text: str, target_language: str) -> Translation:
        self.calls.append(f"translate:{target_language}:{text}")
        if self.translate_error is not None:
            raise self.translate_error
        return Translation(f"[{target_language}] {text}", target_language, Engine("openai", "gpt-4o-mini"))


def grounded(question: str, excerpt: str) -> GroundedAnswer:
    hit = RetrievedChunk(chunk("doc-1", 0, TEXT), 0.9)
    start = TEXT.index(excerpt)
    citation = Citation(1, hit.chunk, start, start + len(excerpt), excerpt, 0.9)
    return GroundedAnswer(question, f"{excerpt[:-1]} [1].", (citation,), (hit,), SupportStatus.SUPPORTED, "ok")


class FakeAnswers:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, tuple[str, ...]]] = []

    async def answer(self, tenant: str, question: str, document_id: str) -> GroundedAnswer:
        self.calls.append(("answer", question, ()))
        return grounded(question, PASSAGES[0])

    async def brief(self, tenant, question, document_id, summary_sentences) -> GroundedAnswer:
        self.calls.append(("brief", question, tuple(summary_sentences)))
        return grounded(question, summary_sentences[0])


class FakeCrew:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.error: DomainError | None = None

    async def analyze(self, tenant: str, record: DocumentRecord, question: str = "") -> CrewResult:
        self.calls.append((tenant, record.document_id, question))
        if self.error is not None:
            raise self.error
        task = CrewTaskResult("document_analyst", "Document Analyst", "- Corrosion on 14 blades [2].", "local",
                              "SmolLM2-135M-Instruct", ("document_search",), Usage(100, 20), Verdict.CITED, ())
        return CrewResult(record.document_id, (task,), task.output, Usage(100, 20), 1.5)


@pytest.fixture
def parts():
    library, nlp, answers, crew = FakeLibrary(), FakeNlp(), FakeAnswers(), FakeCrew()
    pipeline = AnalysisPipeline(DocumentInputs(library, library), library, nlp, answers, crew,
                                AnalysisSettings(graph_wait_s=2), max_question_chars=2000)
    return pipeline, library, nlp, answers, crew


async def test_text_is_ingested_and_a_broad_default_question_gets_the_cited_summary(parts):
    pipeline, library, nlp, answers, crew = parts
    result = await pipeline.run("acme", AnalysisRequest(text=TEXT))

    assert result.steps_run == ("ingest", "rag", "sentiment", "crew", "finalize")
    assert library.uploads == [("acme", library.uploads[0][1], TEXT.encode())]
    assert library.uploads[0][1].startswith("text-") and library.uploads[0][1].endswith(".txt")
    assert result.question == "Provide a comprehensive intelligence brief for this document."
    assert answers.calls == [("brief", result.question, PASSAGES[1:3])]
    assert result.overview == SUMMARY.text and [t.name for t in result.topics] == ["turbine blades", "corrosion"]
    assert result.supporting_context[0] == PASSAGES[1]  # the cited sentence first, then the passages
    assert result.sentiment == Sentiment("negative", -0.2, 0.4)
    assert result.translation is None and result.translation_error is None
    assert crew.calls == [("acme", "doc-1", result.question)]
    assert "translate" not in " ".join(nlp.calls)


async def test_a_specific_question_goes_to_the_answer_engine(parts):
    pipeline, library, _, answers, _ = parts
    library.records["doc-1"] = make_record()
    result = await pipeline.run("acme", AnalysisRequest(document_id="doc-1", question="Where are blades stored?"))
    assert answers.calls == [("answer", "Where are blades stored?", ())]
    assert result.answer.citations[0].excerpt == PASSAGES[0] and library.uploads == []
    assert result.steps[0].summary.startswith("Using stored document")


async def test_a_crew_failure_is_reported_and_the_rest_of_the_analysis_is_kept(parts):
    pipeline, *_, crew = parts
    crew.error = DeadlineExceeded("task 'crew' failed on every provider tried (local: timeout)",
                                  reason="PROVIDER_TIMEOUT")
    events = [e async for e in pipeline.stream("acme", AnalysisRequest(text=TEXT))]

    result = events[-1]
    assert isinstance(result, AnalysisResult) and result.crew is None
    assert result.steps_run == ("ingest", "rag", "sentiment", "crew", "finalize")
    assert result.overview and result.answer.citations and result.sentiment is not None
    crew_step = next(e.step for e in events if isinstance(e, NodeEvent) and e.step.node == "crew")
    assert crew_step.summary.startswith("Crew not available: DEADLINE_EXCEEDED")
    response = analysis_pb(result)
    assert not response.HasField("crew_analysis") and response.crew_error.code == 4
    assert "PROVIDER_TIMEOUT" in str(response.crew_error.details[0])
    assert response.overview and response.citations


async def test_translation_failure_is_reported_and_the_analysis_goes_on(parts):
    pipeline, library, nlp, _, _ = parts
    nlp.translate_error = FailedPrecondition("no LLM provider can serve task 'translate': set OPENAI_API_KEY",
                                             reason="NO_PROVIDER_AVAILABLE")
    result = await pipeline.run("acme", AnalysisRequest(text=TEXT, translate_lang="fr"))

    assert result.steps_run == ("ingest", "rag", "sentiment", "translate", "crew", "finalize")
    assert result.translation is None and result.translation_error.code == grpc.StatusCode.FAILED_PRECONDITION
    assert result.crew.tasks and result.overview
    response = analysis_pb(result)
    assert response.translation_error.code == 9 and "OPENAI_API_KEY" in response.translation_error.message
    assert response.translation == "" and response.crew_analysis.tasks[0].engine.provider == "local"
    assert list(response.steps_run) == list(result.steps_run)
    assert response.citations[0].excerpt == PASSAGES[1] and response.sentiment.label == "negative"


async def test_translation_translates_the_overview(parts):
    pipeline, _, nlp, _, _ = parts
    result = await pipeline.run("acme", AnalysisRequest(text=TEXT, translate_lang="de"))
    assert result.translation.text == f"[de] {SUMMARY.text}" and nlp.calls[-1] == f"translate:de:{SUMMARY.text}"
    assert analysis_pb(result).translation == f"[de] {SUMMARY.text}"


@pytest.mark.parametrize(("options", "steps"), [
    ({}, ("ingest", "rag", "sentiment", "finalize")),
    ({"translate_lang": "de"}, ("ingest", "rag", "sentiment", "translate", "finalize")),
    ({"sync_graph": True}, ("ingest", "rag", "sentiment", "graph_sync", "finalize")),
])
async def test_a_quick_analysis_skips_the_crew_and_keeps_the_rest(parts, options, steps):
    pipeline, library, _, _, crew = parts
    library.records["doc-1"] = make_record()
    result = await pipeline.run("acme", AnalysisRequest(document_id="doc-1", skip_crew=True, **options))
    assert result.steps_run == steps and crew.calls == []
    assert result.crew is None and result.crew_error is None and result.overview and result.answer.citations
    response = analysis_pb(result)
    assert not response.HasField("crew_analysis") and not response.HasField("crew_error")
    request = analysis_request(pb.AnalyzeDocumentRequest(document_id="doc-1", skip_crew=True))
    assert request.skip_crew and analysis_request(pb.StreamAnalyzeDocumentRequest(skip_crew=True)).skip_crew


async def test_graph_sync_waits_for_the_worker_to_confirm_the_document(parts):
    pipeline, library, *_ = parts
    library.records["doc-1"] = make_record()
    library.graph_after["doc-1"] = 2
    events = [e async for e in pipeline.stream("acme", AnalysisRequest(document_id="doc-1", sync_graph=True))]

    steps = [e.step for e in events if isinstance(e, NodeEvent)]
    assert [s.node for s in steps] == ["ingest", "rag", "sentiment", "crew", "graph_sync", "finalize"]
    assert steps[4].summary == "Knowledge graph holds the document's topics and entities."
    assert isinstance(events[-1], AnalysisResult) and events[-1].steps_run[-2:] == ("graph_sync", "finalize")
    assert all(s.duration_ms >= 0 for s in steps) and node_pb(steps[0]).node == "ingest"


async def test_graph_sync_reports_a_disabled_sync_without_waiting(parts):
    _, library, nlp, answers, crew = parts
    patient = AnalysisPipeline(DocumentInputs(library, library), library, nlp, answers, crew,
                               AnalysisSettings(graph_wait_s=120), max_question_chars=2000)
    library.records["doc-1"] = make_record(graph=GraphSyncState.DISABLED)
    started = time.monotonic()
    events = [e async for e in patient.stream("acme", AnalysisRequest(document_id="doc-1", sync_graph=True))]
    graph = next(e.step for e in events if isinstance(e, NodeEvent) and e.step.node == "graph_sync")
    # Waiting would take the whole 120 s: a bound far from it holds on a loaded machine too.
    assert "DOCUTHINKER_RAG_GRAPH_SYNC" in graph.summary and time.monotonic() - started < 60


@pytest.mark.parametrize("request_", [
    AnalysisRequest(),
    AnalysisRequest(text="   "),
    AnalysisRequest(text=TEXT, document_id="doc-1"),
    AnalysisRequest(text=TEXT, translate_lang="x" * 65),
    AnalysisRequest(text=TEXT, question="q" * 2001),
])
async def test_bad_requests_fail_before_any_event(parts, request_):
    pipeline, library, *_ = parts
    stream = pipeline.stream("acme", request_)
    with pytest.raises(InvalidArgument) as caught:
        await stream.__anext__()
    assert caught.value.violations and library.uploads == []


async def test_an_unknown_document_is_not_found_before_any_event(parts):
    pipeline, *_ = parts
    with pytest.raises(NotFound):
        await pipeline.stream("acme", AnalysisRequest(document_id="nope")).__anext__()


async def test_the_question_limit_is_the_answer_services_setting(monkeypatch):
    monkeypatch.setenv("DOCUTHINKER_RAG_MAX_QUESTION_CHARS", "3000")
    library = FakeLibrary()
    retriever = SimpleNamespace(config=AnswerSettings().retrieval_config())  # all the analysis reads of it
    _, _, pipeline = build_analysis(library, library, AnswerService(retriever, extractive=None), None, None, None,
                                    CrewSettings(), AnalysisSettings(), nlp=FakeNlp())
    # Past the 2000 characters the analysis once hard-coded, within the setting: the request goes on to the document.
    with pytest.raises(NotFound):
        await pipeline.stream("acme", AnalysisRequest(document_id="nope", question="q" * 2500)).__anext__()
    with pytest.raises(InvalidArgument) as caught:
        await pipeline.stream("acme", AnalysisRequest(document_id="nope", question="q" * 3001)).__anext__()
    assert [v.field for v in caught.value.violations] == ["question"]
