"""The full analysis (DocuThinker's DocumentIntelligenceService) as a LangGraph ``StateGraph``.

    ingest -> rag -> sentiment -> [translate] -> crew -> [graph_sync] -> finalize

- ingest: the request's document: inline text goes through the ingestion pipeline (parsed,
  chunked, embedded and indexed for dense and BM25 search: the vector sync; deduplicated by
  content hash), a document id must name a READY document of the tenant.
- rag: overview (NLP Summarize: extractive, or an LLM summary when the NLP service prefers
  one), topics (NLP ExtractTopics), the grounded answer to the question (a broad request is
  answered with the cited summary, see ``answers``) and supporting quotes.
- sentiment: NLP AnalyzeSentiment of the document.
- translate (only with translate_lang): NLP TranslateText of the overview; a failure (offline:
  FAILED_PRECONDITION naming the variables that enable a provider) is reported in the result,
  and the analysis goes on.
- crew (unless skip_crew): the analyst -> cross-referencer -> curator crew over the document; a failure (its model
  timed out on a saturated machine, the budget is spent) is reported in the result, like a
  translation's, and the analysis goes on: the overview, answer and sentiment stand on their own.
- graph_sync (only with sync_graph): ingestion already queued the document in the graph
  outbox; this step waits (bounded) for the graph-sync worker to confirm it. It never writes
  to the graph itself.
- finalize: assembles the result.
Each node appends a timed step; ``stream`` yields one event per node as it completes.
"""

from __future__ import annotations

import asyncio
import operator
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Protocol, TypedDict

from langgraph.graph import END, START, StateGraph

from services.rag.analysis.answers import Answers, is_broad
from services.rag.analysis.model import AnalysisRequest, AnalysisResult, Step
from services.rag.analysis.nlp import NlpPort, Sentiment, Summary, Translation
from services.rag.analysis.settings import AnalysisSettings
from services.rag.answers.model import GroundedAnswer
from services.rag.answers.sentences import split_sentences
from services.rag.crew import CrewResult, DocumentInputs, ResolvedDocument, Topic
from services.rag.crew.evidence import clip
from services.rag.documents import DocumentRecord, GraphSyncState
from services.runtime.errors import DomainError, FieldViolation, InvalidArgument

MAX_LANGUAGE_CHARS = 64


class Crew(Protocol):
    async def analyze(self, tenant: str, record: DocumentRecord, question: str = "") -> CrewResult: ...


class Records(Protocol):
    async def get(self, tenant: str, document_id: str) -> DocumentRecord: ...


class AnalysisState(TypedDict, total=False):
    tenant: str
    request: AnalysisRequest
    question: str
    document: ResolvedDocument
    text: str
    summary: Summary
    topics: list[Topic]
    answer: GroundedAnswer
    supporting: list[str]
    sentiment: Sentiment
    translation: Translation | None
    translation_error: DomainError | None
    crew: CrewResult | None
    crew_error: DomainError | None
    steps: Annotated[list[Step], operator.add]


@dataclass(frozen=True)
class NodeEvent:
    step: Step


def _timed(name: str, fn: Callable[[AnalysisState], Awaitable[tuple[dict[str, Any], str]]]):
    async def node(state: AnalysisState) -> dict[str, Any]:
        started = time.perf_counter()
        update, summary = await fn(state)
        update["steps"] = [Step(name, summary, round((time.perf_counter() - started) * 1000, 2))]
        return update

    return node


def _after_sentiment(state: AnalysisState) -> str:
    return "translate" if state["request"].translate_lang.strip() else _after_translate(state)


def _after_translate(state: AnalysisState) -> str:
    return _after_crew(state) if state["request"].skip_crew else "crew"


def _after_crew(state: AnalysisState) -> str:
    return "graph_sync" if state["request"].sync_graph else "finalize"


def validate(request: AnalysisRequest, max_question_chars: int) -> None:
    violations = []
    if len(request.question) > max_question_chars:
        violations.append(FieldViolation("question", f"must be at most {max_question_chars} characters"))
    language = request.translate_lang
    if len(language) > MAX_LANGUAGE_CHARS or any(not c.isprintable() for c in language):
        violations.append(FieldViolation("translate_lang", "a language name or BCP-47 tag, e.g. fr or French"))
    if violations:
        raise InvalidArgument("invalid request: " + "; ".join(f"{v.field} {v.description}" for v in violations),
                              violations=violations)


class AnalysisPipeline:
    def __init__(self, inputs: DocumentInputs, records: Records, nlp: NlpPort, answers: Answers, crew: Crew,
                 settings: AnalysisSettings, *, max_question_chars: int) -> None:
        """``max_question_chars``: the answer service's limit (``DOCUTHINKER_RAG_MAX_QUESTION_CHARS``), so a
        question refused by Query is refused here too."""
        self._inputs = inputs
        self._records = records
        self._nlp = nlp
        self._answers = answers
        self._crew = crew
        self.settings = settings
        self._max_question_chars = max_question_chars
        self._graph = self._build()

    def _build(self):
        graph = StateGraph(AnalysisState)
        for name, fn in (("ingest", self._ingest), ("rag", self._rag), ("sentiment", self._sentiment),
                         ("translate", self._translate), ("crew", self._run_crew), ("graph_sync", self._graph_sync),
                         ("finalize", self._finalize)):
            graph.add_node(name, _timed(name, fn))
        graph.add_edge(START, "ingest")
        graph.add_edge("ingest", "rag")
        graph.add_edge("rag", "sentiment")
        graph.add_conditional_edges("sentiment", _after_sentiment, ["translate", "crew", "graph_sync", "finalize"])
        graph.add_conditional_edges("translate", _after_translate, ["crew", "graph_sync", "finalize"])
        graph.add_conditional_edges("crew", _after_crew, ["graph_sync", "finalize"])
        graph.add_edge("graph_sync", "finalize")
        graph.add_edge("finalize", END)
        return graph.compile()

    # -- nodes ---------------------------------------------------------------------------------

    async def _ingest(self, state: AnalysisState) -> tuple[dict, str]:
        request = state["request"]
        document = await self._inputs.resolve(state["tenant"], request.text, request.document_id)
        record = document.record
        text = await self._inputs.text(state["tenant"], record.document_id, self.settings.max_text_chars)
        name = record.title or record.filename
        if document.ingested and not document.duplicate:
            summary = f"Ingested {name}: {record.chunk_count} chunks embedded and indexed (vector + keyword)."
        elif document.ingested:
            summary = f"Same text already stored as {name} ({record.chunk_count} chunks): nothing re-indexed."
        else:
            summary = f"Using stored document {name} ({record.chunk_count} chunks)."
        return {"document": document, "text": text}, summary

    async def _rag(self, state: AnalysisState) -> tuple[dict, str]:
        tenant, text = state["tenant"], state["text"]
        document_id = state["document"].record.document_id
        summary, topics = await asyncio.gather(
            self._nlp.summarize(text, self.settings.summary_sentences),
            self._nlp.topics(text, self.settings.max_topics),
        )
        question = state["question"]
        sentences = summary.sentences or tuple(span.text for span in split_sentences(summary.text))
        if is_broad(question) and sentences:
            answer = await self._answers.brief(tenant, question, document_id, sentences)
        else:
            answer = await self._answers.answer(tenant, question, document_id)
        supporting = _quotes(answer, self.settings.supporting_quotes, self.settings.quote_chars)
        return {"summary": summary, "topics": list(topics), "answer": answer, "supporting": supporting}, (
            f"Overview of {len(summary.sentences) or 1} sentence(s) ({summary.engine.provider}), {len(topics)} topics, "
            f"answer {answer.support_status.name} with {len(answer.citations)} citation(s).")

    async def _sentiment(self, state: AnalysisState) -> tuple[dict, str]:
        sentiment = await self._nlp.sentiment(state["text"])
        return {"sentiment": sentiment}, f"Sentiment {sentiment.label} (score {sentiment.score:+.2f})."

    async def _translate(self, state: AnalysisState) -> tuple[dict, str]:
        language = state["request"].translate_lang.strip()
        source = _cut(state["summary"].text, self.settings.translation_chars)
        try:
            translation = await self._nlp.translate(source, language)
        except DomainError as error:
            return {"translation": None, "translation_error": error}, (
                f"Translation to {language} not available: {error.code.name}: {error.message}")
        return {"translation": translation, "translation_error": None}, (
            f"Overview translated to {translation.target_language or language} ({translation.engine.provider}).")

    async def _run_crew(self, state: AnalysisState) -> tuple[dict, str]:
        try:
            crew = await self._crew.analyze(state["tenant"], state["document"].record, state["question"])
        except DomainError as error:
            return {"crew": None, "crew_error": error}, f"Crew not available: {error.code.name}: {error.message}"
        engines = ", ".join(f"{t.role}: {t.provider}/{t.model}" for t in crew.tasks)
        return {"crew": crew, "crew_error": None}, (
            f"Crew of {len(crew.tasks)} agents in {crew.duration_s:.1f} s ({engines}).")

    async def _graph_sync(self, state: AnalysisState) -> tuple[dict, str]:
        tenant, document_id = state["tenant"], state["document"].record.document_id
        deadline = time.monotonic() + self.settings.graph_wait_s
        while True:
            record = await self._records.get(tenant, document_id)
            if record.graph_sync is not GraphSyncState.PENDING or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.25)
        if record.graph_sync is GraphSyncState.SYNCED:
            return {}, "Knowledge graph holds the document's topics and entities."
        if record.graph_sync is GraphSyncState.DISABLED:
            return {}, "Graph sync is disabled (DOCUTHINKER_RAG_GRAPH_SYNC=false): nothing sent to the graph."
        return {}, f"Queued for the knowledge graph; not confirmed within {self.settings.graph_wait_s:g} s."

    async def _finalize(self, state: AnalysisState) -> tuple[dict, str]:
        return {}, "Assembled the analysis."

    # -- running -------------------------------------------------------------------------------

    async def close(self) -> None:
        closer = getattr(self._nlp, "close", None)
        if closer is not None:
            await closer()

    def _initial(self, tenant: str, request: AnalysisRequest) -> AnalysisState:
        validate(request, self._max_question_chars)
        question = " ".join(request.question.split()) or self.settings.default_question
        return {"tenant": tenant, "request": request, "question": question, "steps": [],
                "translation": None, "translation_error": None, "crew": None, "crew_error": None}

    async def run(self, tenant: str, request: AnalysisRequest) -> AnalysisResult:
        result = None
        async for event in self.stream(tenant, request):
            if isinstance(event, AnalysisResult):
                result = event
        assert result is not None
        return result

    async def stream(self, tenant: str, request: AnalysisRequest) -> AsyncIterator[NodeEvent | AnalysisResult]:
        state = self._initial(tenant, request)
        async for update in self._graph.astream(state, stream_mode="updates"):
            for delta in update.values():
                steps = delta.get("steps", [])
                state = {**state, **delta, "steps": state["steps"] + steps}
                for step in steps:
                    yield NodeEvent(step)
        yield _result(state)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    end = text.rfind(". ", 0, limit)
    return text[: end + 1 if end > limit // 2 else limit]


def _quotes(answer: GroundedAnswer, limit: int, chars: int) -> list[str]:
    """The answer's cited sentences, then the best passages, each once."""
    quotes = [c.excerpt for c in answer.citations] + [clip(h.chunk.text, chars) for h in answer.retrieved]
    kept: list[str] = []
    for quote in quotes:
        flat = " ".join(quote.split())
        if flat and not any(flat in k or k in flat for k in kept):
            kept.append(flat)
    return kept[:limit]


def _result(state: AnalysisState) -> AnalysisResult:
    summary = state["summary"]
    return AnalysisResult(
        document_id=state["document"].record.document_id,
        question=state["question"],
        overview=summary.text,
        summary=summary,
        topics=tuple(state["topics"]),
        answer=state["answer"],
        supporting_context=tuple(state["supporting"]),
        crew=state.get("crew"),
        crew_error=state.get("crew_error"),
        sentiment=state.get("sentiment"),
        translation=state.get("translation"),
        translation_error=state.get("translation_error"),
        steps=tuple(state["steps"]),
    )
