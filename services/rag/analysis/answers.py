"""The analysis's question answer: the grounded answer engine, and a brief for broad requests.

A broad instruction ("Provide a comprehensive intelligence brief for this document.", the
seed's default) asks for no particular fact, so the extractive engine, which looks for the
sentence that answers a question, would find none and abstain. Such a request is answered
with the document's summary instead: each summary sentence is matched to the document
sentence that best supports it (hybrid retrieval, then the extractive engine's own sentence
ranking), and the answer quotes those sentences with citations whose offsets slice the
page text exactly. A specific question goes to the answer engine unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from services.rag.answers import lexical
from services.rag.answers.answering import AnswerService
from services.rag.answers.extractive import ScoredUnit, citation_for
from services.rag.answers.model import AnswerSentence, GroundedAnswer, SupportStatus, with_marker
from services.rag.answers.support import answer_status, confidence_note
from services.rag.retrieval import RetrievedChunk

_INSTRUCTION_WORDS = (
    "provide give write produce create prepare make generate compose draft please comprehensive complete full "
    "detailed thorough short quick brief concise general high level intelligence executive overview summary "
    "summarise summarize summarization summarisation key main important core central essential points ideas "
    "takeaways highlights findings gist outline digest tldr tl dr analysis analyse analyze review describe "
    "explain document documents file text report paper content contents article"
)
_BROAD_CUES = "brief overview summary summarise summarize summarization summarisation takeaways highlights gist " \
              "outline digest tldr points"


def _stems(words: str) -> frozenset[str]:
    return frozenset(lexical.content_terms(words))


class Answers(Protocol):
    async def answer(self, tenant: str, question: str, document_id: str) -> GroundedAnswer: ...

    async def brief(self, tenant: str, question: str, document_id: str,
                    summary_sentences: Sequence[str]) -> GroundedAnswer: ...


def is_broad(question: str) -> bool:
    """True for a request about the whole document rather than a fact in it."""
    terms = lexical.content_terms(question)
    if not terms <= _stems(_INSTRUCTION_WORDS):
        return False  # names something specific ("summarise the revenue section")
    asks_about = "about" in lexical.tokens(question)  # "What is this document about?"
    return bool(terms & _stems(_BROAD_CUES)) or (asks_about and bool(terms))


class RagAnswers:
    """``Answers`` over the RAG service's own answer engine, restricted to one document."""

    def __init__(self, answers: AnswerService, candidates_per_sentence: int = 3) -> None:
        self._answers = answers
        self._k = candidates_per_sentence

    async def answer(self, tenant: str, question: str, document_id: str) -> GroundedAnswer:
        return await self._answers.answer(tenant, question, 0, [document_id])

    async def brief(self, tenant: str, question: str, document_id: str,
                    summary_sentences: Sequence[str]) -> GroundedAnswer:
        extractive = self._answers.extractive
        chosen: list[ScoredUnit] = []
        pool: dict[str, RetrievedChunk] = {}
        for sentence in summary_sentences:
            hits = await self._answers.retriever.search(tenant, sentence, self._k, [document_id])
            pool.update({h.chunk.chunk_id: h for h in hits if h.chunk.chunk_id not in pool})
            ranked = await asyncio.to_thread(extractive.rank, sentence, hits)
            # The summary quotes the document: its own sentence is found by its text, whatever the answer ranker
            # (which scores answers to questions, not quotes) makes of it; a paraphrase needs the ranker's confidence.
            said = " ".join(sentence.split())
            quoted = [s for s in ranked if " ".join(s.unit.text.split()) == said]
            if quoted:
                best = quoted[0]
            elif ranked and extractive.answerability(ranked) >= extractive.threshold:
                best = ranked[0]
            else:
                continue
            if all((c.retrieved.chunk.document_id, c.page_start) != (best.retrieved.chunk.document_id,
                                                                       best.page_start) for c in chosen):
                chosen.append(best)
        if not chosen:  # nothing in the summary could be located: let the answer engine decide
            return await self.answer(tenant, question, document_id)
        citations = tuple(citation_for(i, s) for i, s in enumerate(chosen, 1))
        sentences = tuple(AnswerSentence(" ".join(s.span.text.split()), (i,), True, s.score)
                          for i, s in enumerate(chosen, 1))
        status = answer_status([True] * len(sentences))
        note = confidence_note(status) + " Broad request: answered with the document's summary, quoted and cited."
        return GroundedAnswer(
            question=question,
            answer=" ".join(with_marker(s.text, s.markers[0]) for s in sentences),
            citations=citations,
            retrieved=tuple(sorted(pool.values(), key=lambda h: -h.score)),
            support_status=status if sentences else SupportStatus.INSUFFICIENT,
            confidence_note=note,
            sentences=sentences,
        )
