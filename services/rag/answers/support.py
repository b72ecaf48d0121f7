"""Does the evidence support a sentence? And what does that make of the whole answer?

A claim is checked against the sentences of its cited evidence: embedding similarity (MiniLM
cosine) plus lexical entailment heuristics (the claim's content terms must be present, its
numbers must appear in the evidence, a negation must not appear on one side only). Text shaped
like a planted instruction is never support and never supported.

An answer is SUPPORTED when every sentence is, PARTIAL when some sentences (or some parts of
a multi-part question) lack support, INSUFFICIENT when nothing is supported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from services.rag.answers import lexical
from services.rag.answers.injection import is_instruction
from services.rag.answers.model import SupportStatus
from services.rag.answers.sentences import Span, split_sentences
from services.rag.retrieval.ports import QueryEncoder

SUPPORT_THRESHOLD = 0.62
"""Claims scoring below this against their best evidence sentence are unsupported.

A verbatim sentence scores 1.0; faithful paraphrases score about 0.7-0.9; claims about another
fact of the same passage (other numbers, other names) fall to 0.3-0.55 once the number and
term checks bite (tests/rag/answers/test_text_units.py holds examples of each).
"""


@dataclass(frozen=True)
class SupportCheck:
    supported: bool
    score: float
    evidence_index: int = -1
    """Which evidence text held the best sentence (-1 when none)."""
    span: Span | None = None
    """The best supporting sentence, with offsets inside that evidence text."""


class SupportChecker:
    def __init__(self, encoder: QueryEncoder, threshold: float = SUPPORT_THRESHOLD) -> None:
        self._encoder = encoder
        self.threshold = threshold

    def check(self, claim: str, evidence: Sequence[str]) -> SupportCheck:
        if not claim.strip() or is_instruction(claim):
            return SupportCheck(False, 0.0)
        candidates: list[tuple[int, Span]] = [
            (i, span) for i, text in enumerate(evidence) for span in split_sentences(text) if not is_instruction(span.text)
        ]
        if not candidates:
            return SupportCheck(False, 0.0)
        vectors = self._encoder.encode([claim, *(span.text for _, span in candidates)])
        cosines = vectors[1:] @ vectors[0]
        best = SupportCheck(False, 0.0)
        for (index, span), cosine in zip(candidates, np.asarray(cosines, dtype=float), strict=True):
            score = entailment_score(claim, span.text, float(cosine))
            if score > best.score:
                best = SupportCheck(score >= self.threshold, score, index, span)
        return best


def entailment_score(claim: str, evidence: str, cosine: float) -> float:
    """Similarity tempered by term coverage, number agreement and negation agreement, in [0, 1]."""
    terms = lexical.content_terms(claim)
    term_cover = lexical.coverage(terms, lexical.content_terms(evidence))
    score = 0.5 * max(cosine, 0.0) + 0.5 * term_cover
    claim_numbers = lexical.numbers(claim)
    if claim_numbers and not claim_numbers <= lexical.numbers(evidence):
        score *= 0.6
    if lexical.negated(claim) != lexical.negated(evidence):
        score *= 0.8
    return min(score, 1.0)


def answer_status(supported: Sequence[bool], unanswered_parts: int = 0) -> SupportStatus:
    if not any(supported):
        return SupportStatus.INSUFFICIENT
    if not all(supported) or unanswered_parts:
        return SupportStatus.PARTIAL
    return SupportStatus.SUPPORTED


def confidence_note(status: SupportStatus, *, dropped: int = 0, unanswered: Sequence[str] = (), flagged: bool = False) -> str:
    notes = {
        SupportStatus.SUPPORTED: "Every sentence of the answer is supported by the cited passages.",
        SupportStatus.PARTIAL: "Only part of the answer is supported by the documents.",
        SupportStatus.INSUFFICIENT: "The retrieved passages do not contain enough evidence to answer.",
        SupportStatus.NOT_APPLICABLE: "No document retrieval was needed for this message.",
    }
    parts = [notes[status]]
    if unanswered:
        parts.append("No evidence was found for: " + "; ".join(f'"{q}"' for q in unanswered) + ".")
    if dropped:
        parts.append(f"{dropped} generated sentence(s) were removed because their citations did not support them.")
    if flagged:
        parts.append("The question contained instructions aimed at the assistant; they were ignored and only the documents were used.")
    return " ".join(parts)
