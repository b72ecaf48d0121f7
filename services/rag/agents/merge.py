"""One answer from the answers to each sub-query: markers renumbered, parts kept apart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from services.rag.answers.model import (
    REFUSAL,
    AnswerSentence,
    Citation,
    GroundedAnswer,
    SupportStatus,
    Usage,
    with_marker,
)
from services.rag.answers.support import answer_status, confidence_note
from services.rag.retrieval import RetrievedChunk

PARTIAL_REFUSAL = "I could not find enough evidence in the provided documents to answer the rest of the question."


def merge_parts(question: str, parts: Sequence[tuple[str, GroundedAnswer]],
                retrieved: Sequence[RetrievedChunk]) -> GroundedAnswer:
    if len(parts) == 1:
        return replace(parts[0][1], question=question, retrieved=tuple(retrieved))
    citations: list[Citation] = []
    sentences: list[AnswerSentence] = []
    texts: list[str] = []
    unanswered: list[str] = []
    usage = Usage()
    for index, (sub_query, answer) in enumerate(parts):
        usage = Usage(usage.input_tokens + answer.usage.input_tokens, usage.output_tokens + answer.usage.output_tokens,
                      usage.cache_read_tokens + answer.usage.cache_read_tokens,
                      usage.cache_write_tokens + answer.usage.cache_write_tokens, usage.cost_usd + answer.usage.cost_usd)
        if answer.abstained:
            unanswered.append(sub_query)
            continue
        renumber: dict[int, int] = {}
        for citation in answer.citations:
            renumber[citation.marker] = len(citations) + 1
            citations.append(replace(citation, marker=len(citations) + 1))
        for sentence in answer.sentences:
            markers = tuple(renumber[m] for m in sentence.markers if m in renumber)
            sentences.append(replace(sentence, markers=markers, part=index))
            texts.append(with_marker(sentence.text, markers[0]) if markers else sentence.text)
    status = answer_status([s.supported for s in sentences], unanswered_parts=len(unanswered))
    if not sentences:
        text = REFUSAL
    else:
        text = " ".join(texts) + (f" {PARTIAL_REFUSAL}" if unanswered else "")
    engines = [a.engine for _, a in parts if not a.abstained] or [parts[0][1].engine]
    return GroundedAnswer(
        question=question,
        answer=text,
        citations=tuple(citations),
        retrieved=tuple(retrieved),
        support_status=status if sentences else SupportStatus.INSUFFICIENT,
        confidence_note=confidence_note(status, unanswered=unanswered),
        sentences=tuple(sentences),
        engine=engines[0],
        usage=usage,
    )
