"""Grounded question answering: validate, retrieve (tenant-scoped), answer, stream.

The generative engine is used when a provider can serve the ``answer`` task; otherwise (no
key configured, ``NoProviderAvailable``) the extractive engine answers, offline and for real.
Unknown document ids in a filter are a NOT_FOUND error, not an empty answer: a caller who
names a document expects it to be searched (a tenant cannot see another tenant's ids either,
so the error does not reveal that they exist elsewhere).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from services.providers.errors import NoProviderAvailable
from services.rag.answers.extractive import ExtractiveAnswerer
from services.rag.answers.generative import GenerativeAnswerer
from services.rag.answers.injection import assess_question
from services.rag.answers.model import Citation, GroundedAnswer
from services.rag.questions import split_question
from services.rag.retrieval import FusionMethod, HybridRetriever, RetrievedChunk
from services.runtime import domain_metrics, tracing
from services.runtime.errors import FieldViolation, InvalidArgument, NotFound
from services.vocabulary.limits import MAX_QUESTION_CHARS

log = logging.getLogger("docuthinker.rag.answers")

MAX_DOCUMENT_IDS = 100
POOL_SIZE = 20
"""Fused chunks every answer reads its evidence units from (what the answer ranker was trained on)."""
MISSING_IDS_SHOWN = 5
"""Unknown ids named in a NOT_FOUND: the rest are counted, so the error stays small (and fits a trailer)."""
"""The seed's limit on a question (pydantic max_length)."""


class DocumentLookup(Protocol):
    def get_document(self, tenant: str, document_id: str) -> object | None: ...


@dataclass(frozen=True)
class QueryRequest:
    question: str
    top_k: int
    document_ids: tuple[str, ...]


@dataclass(frozen=True)
class RetrievalEvent:
    chunks: tuple[RetrievedChunk, ...]


@dataclass(frozen=True)
class AnswerDelta:
    text: str


@dataclass(frozen=True)
class CitationEvent:
    citation: Citation


@dataclass(frozen=True)
class AnswerDone:
    answer: GroundedAnswer


AnswerEvent = RetrievalEvent | AnswerDelta | CitationEvent | AnswerDone


def validate(question: str, top_k: int, document_ids: Sequence[str], max_top_k: int,
             field: str = "question", *, max_question_chars: int = MAX_QUESTION_CHARS,
             max_document_ids: int = MAX_DOCUMENT_IDS) -> QueryRequest:
    """Raises InvalidArgument with one violation per bad field."""
    violations = []
    text = question.strip()
    if not text:
        violations.append(FieldViolation(field, "must not be empty"))
    elif len(text) > max_question_chars:
        violations.append(FieldViolation(field, f"must be at most {max_question_chars} characters (got {len(text)})"))
    if top_k < 0 or top_k > max_top_k:
        violations.append(FieldViolation("top_k", f"must be between 1 and {max_top_k} (0 means the default)"))
    ids = tuple(dict.fromkeys(d.strip() for d in document_ids))
    if any(not d for d in ids):
        violations.append(FieldViolation("document_ids", "must not contain empty ids"))
    if len(ids) > max_document_ids:
        violations.append(FieldViolation("document_ids", f"must name at most {max_document_ids} documents "
                                                         f"(got {len(ids)})"))
    if violations:
        raise InvalidArgument("invalid request: " + "; ".join(f"{v.field} {v.description}" for v in violations),
                              violations=violations)
    return QueryRequest(text, top_k, ids)


def unknown_documents(missing: Sequence[str]) -> NotFound:
    """NOT_FOUND naming the first few unknown ids and counting the rest (1000+ ids once overflowed the trailer)."""
    shown = list(missing[:MISSING_IDS_SHOWN])
    more = f" and {len(missing) - len(shown)} more" if len(missing) > len(shown) else ""
    return NotFound(
        f"{len(missing)} unknown document id(s): {', '.join(shown)}{more}",
        reason="DOCUMENT_NOT_FOUND",
        metadata={"document_ids": ",".join(shown), "missing_count": str(len(missing))},
        violations=[FieldViolation("document_ids", f"no such document: {d}") for d in shown],
    )


def pool_size(top_k: int) -> int:
    return max(POOL_SIZE, top_k)


def question_parts(question: str) -> list[str]:
    """Sub-questions of a clearly multi-part question ("Who ..., and how ...?"), else the question itself.

    Only splits whose every part is itself a question are taken, so code or lists inside an honest
    question ("What does `SELECT ...; DROP ...;` do?") are never cut apart.
    """
    parts = split_question(question)
    return parts if len(parts) > 1 and all(p.endswith("?") for p in parts) else [question]


class AnswerService:
    def __init__(
        self,
        retriever: HybridRetriever,
        extractive: ExtractiveAnswerer,
        generative: GenerativeAnswerer | None = None,
        documents: DocumentLookup | None = None,
        can_generate: Callable[[], bool] | None = None,
    ) -> None:
        self.retriever = retriever
        self.extractive = extractive
        self._generative = generative
        self._documents = documents
        self._can_generate = can_generate or (lambda: generative is not None)
        self._in_flight = 0

    @property
    def busy(self) -> bool:
        """True while a search, retrieval or answer is being worked on (background warm-up yields to it)."""
        return self._in_flight > 0

    @contextlib.contextmanager
    def _working(self) -> Iterator[None]:
        self._in_flight += 1
        try:
            yield
        finally:
            self._in_flight -= 1

    @property
    def max_top_k(self) -> int:
        return self.retriever.config.max_top_k

    def validate(self, question: str, top_k: int, document_ids: Sequence[str], field: str = "question") -> QueryRequest:
        """``validate`` with this service's limits (top_k, question length, document_ids per request)."""
        config = self.retriever.config
        return validate(question, top_k, document_ids, config.max_top_k, field,
                        max_question_chars=config.max_question_chars, max_document_ids=config.max_document_ids)

    async def check_documents(self, tenant: str, document_ids: Sequence[str]) -> None:
        if not document_ids or self._documents is None:
            return
        lookup = self._documents
        missing = [d for d in document_ids if await asyncio.to_thread(lookup.get_document, tenant, d) is None]
        if missing:
            raise unknown_documents(missing)

    async def search(self, tenant: str, query: str, top_k: int, document_ids: Sequence[str],
                     fusion: FusionMethod | None = None, expand_with_graph: bool = False) -> list[RetrievedChunk]:
        request = self.validate(query, top_k, document_ids, field="query")
        with self._working():
            await self.check_documents(tenant, request.document_ids)
            return await self.retriever.search(tenant, request.question, request.top_k or None,
                                               request.document_ids or None, fusion, expand_with_graph)

    async def retrieve(self, tenant: str, request: QueryRequest, top_k: int | None = None) -> list[RetrievedChunk]:
        """The evidence pool of the question (``pool_size`` fused chunks); a multi-part question retrieves for each
        part and interleaves them."""
        parts = question_parts(assess_question(request.question).cleaned)
        k = top_k or request.top_k or self.retriever.config.default_top_k
        with self._working():
            found = await asyncio.gather(*(self.evidence_for(tenant, part, k, request.document_ids)
                                           for part in parts))
        merged: dict[str, RetrievedChunk] = {}
        for rank in range(max(len(hits) for hits in found)):
            for hits in found:
                if rank < len(hits):
                    merged.setdefault(hits[rank].chunk.chunk_id, hits[rank])
        return list(merged.values())

    async def evidence_for(self, tenant: str, question: str, top_k: int,
                           document_ids: Sequence[str] = ()) -> list[RetrievedChunk]:
        """The evidence pool of one question: the ``pool_size(top_k)`` fused chunks the answer ranker reads."""
        return await self.retriever.search(tenant, question, pool_size(top_k), document_ids or None)

    async def compose(self, question: str, retrieved: Sequence[RetrievedChunk], top_k: int = 0) -> GroundedAnswer:
        """The answer from given evidence: generative when a provider serves it, else extractive; its ``retrieved``
        are the ``top_k`` (default: the configured) chunks of the evidence holding the best units.

        A question carrying instructions for the model is answered from its honest part only.
        """
        started = time.perf_counter()
        with self._working(), tracing.stage("rag.answer", **{"docuthinker.evidence": len(retrieved)}) as span:
            answer = await self._compose(question, retrieved, top_k or self.retriever.config.default_top_k)
            span.set_attribute("docuthinker.support", answer.support_status.name.lower())
        domain_metrics.ANSWER_SECONDS.observe(time.perf_counter() - started)
        domain_metrics.ANSWERS.labels(answer.support_status.name.lower()).inc()
        return answer

    async def _compose(self, question: str, retrieved: Sequence[RetrievedChunk], shown: int) -> GroundedAnswer:
        assessment = assess_question(question)
        asked, flagged = assessment.cleaned, assessment.suspicious
        answer = None
        if self._generative is not None and retrieved and self._can_generate():
            # The model reads the chunks holding the best units, and the best rows and fields as cells.
            ranked = await asyncio.to_thread(self.extractive.rank, asked, retrieved)
            shown_chunks = self.extractive.order_chunks(ranked, retrieved)[:shown]
            cells = await asyncio.to_thread(self.extractive.candidate_cells, asked, ranked)
            try:
                answer = await self._generative.answer(asked, shown_chunks, flagged=flagged, candidates=cells)
            except NoProviderAvailable:
                log.info("no provider for answers; answering extractively")
        if answer is None:
            parts = question_parts(asked)
            answer = await asyncio.to_thread(self.extractive.answer_parts, asked, parts, retrieved, flagged=flagged,
                                             shown=shown)
        return replace(answer, question=question)

    async def answer(self, tenant: str, question: str, top_k: int = 0,
                     document_ids: Sequence[str] = ()) -> GroundedAnswer:
        request = self.validate(question, top_k, document_ids)
        await self.check_documents(tenant, request.document_ids)
        retrieved = await self.retrieve(tenant, request)
        return await self.compose(request.question, retrieved, request.top_k)

    async def stream(self, tenant: str, question: str, top_k: int = 0,
                     document_ids: Sequence[str] = ()) -> AsyncIterator[AnswerEvent]:
        """Retrieval, then the (already verified) answer sentence by sentence, citations, done."""
        request = self.validate(question, top_k, document_ids)
        await self.check_documents(tenant, request.document_ids)
        retrieved = await self.retrieve(tenant, request)
        answer = await self.compose(request.question, retrieved, request.top_k)
        yield RetrievalEvent(answer.retrieved)
        pieces = answer.answer.split(" ")
        for i in range(0, len(pieces), 8):
            yield AnswerDelta(" ".join(pieces[i : i + 8]) + (" " if i + 8 < len(pieces) else ""))
        for citation in answer.citations:
            yield CitationEvent(citation)
        yield AnswerDone(answer)
