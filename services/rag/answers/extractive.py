"""The offline answer engine: the best-supported sentences of the retrieved chunks, each cited.

Every sentence of every retrieved chunk is a candidate, scored against the question by MiniLM
cosine similarity and by the share of the question's content terms it contains; planted
instructions are never candidates. The best sentence answers, a close runner-up may join it,
and when even the best is too weak the answer is the fixed refusal sentence. Citations carry
exact offsets in the page text: ``provenance.char_start`` + the sentence's offset in the chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from services.rag.answers import lexical
from services.rag.answers.injection import is_instruction
from services.rag.answers.model import REFUSAL, AnswerSentence, Citation, GroundedAnswer, SupportStatus, with_marker
from services.rag.answers.sentences import Span, split_sentences
from services.rag.answers.spans import entity_labels, expected_types, short_answer
from services.rag.answers.support import answer_status, confidence_note
from services.rag.retrieval import RetrievedChunk
from services.rag.retrieval.ports import QueryEncoder

ABSTAIN_THRESHOLD = 0.54
"""Best-sentence score under which the engine abstains.

Calibrated with ``python -m bench.calibrate_abstention`` on SQuAD 2.0 (8 dev articles, 1,299
answerable and 1,529 unanswerable questions, 20 distractor articles in the same index): the
highest threshold that still answers >= 80% of answerable questions is 0.5435 (80.1% answered,
31.4% of unanswerable refused; two-fold by article: 0.5443 / 0.5427, held-out 79.7% / 80.8%
answered, 34.2% / 27.7% refused). Lower answers more and refuses less (0.50: 87.8% / 21.1%),
higher refuses more (0.60: 68.2% / 46.4%). SQuAD 2.0's unanswerable questions are written to
look answerable from the same paragraph, so a similarity threshold separates them poorly.
"""


@dataclass(frozen=True)
class ExtractiveConfig:
    abstain_threshold: float = ABSTAIN_THRESHOLD
    cosine_weight: float = 0.5
    """Weight of MiniLM cosine similarity; the question-term coverage gets the rest."""
    max_sentences: int = 1
    """One sentence per (sub-)question: on SQuAD a runner-up within the margin lowered citation
    precision from 0.74 to 0.68 (bench/squad.py, all answerable dev questions) for little added answer."""
    runner_up_margin: float = 0.03
    """A second sentence joins the answer only when it scores within this of the best."""
    min_words: int = 3
    """Shorter fragments (headings, table labels) are not answers on their own."""
    type_bonus: float = 0.1
    """Ranking bonus for sentences holding an entity of the type the question asks for (who -> a
    person, when -> a date ...). It reorders candidates only; abstention uses the plain score.
    On SQuAD it moved citation precision 0.737 -> 0.743 and answer EM 0.289 -> 0.297."""


@dataclass(frozen=True)
class ScoredSentence:
    retrieved: RetrievedChunk
    span: Span
    """Offsets inside the chunk text."""
    score: float
    cosine: float
    coverage: float
    rank_score: float = 0.0
    """``score`` plus the answer-type bonus; what candidates are ordered by."""

    @property
    def page_start(self) -> int:
        return self.retrieved.chunk.provenance.char_start + self.span.start

    @property
    def page_end(self) -> int:
        return self.retrieved.chunk.provenance.char_start + self.span.end


class ExtractiveAnswerer:
    def __init__(self, encoder: QueryEncoder, config: ExtractiveConfig | None = None) -> None:
        self._encoder = encoder
        self.config = config or ExtractiveConfig()

    def rank(self, question: str, retrieved: Sequence[RetrievedChunk]) -> list[ScoredSentence]:
        """Candidate sentences, best first, one per distinct page span (chunk overlaps repeat them)."""
        candidates: list[tuple[RetrievedChunk, Span]] = []
        seen: set[tuple[str, int, int]] = set()
        for hit in retrieved:
            p = hit.chunk.provenance
            for span in split_sentences(hit.chunk.text):
                key = (p.document_id, p.section_index, p.char_start + span.start)
                if key in seen or len(lexical.tokens(span.text)) < self.config.min_words or is_instruction(span.text):
                    continue
                seen.add(key)
                candidates.append((hit, span))
        if not candidates:
            return []
        vectors = self._encoder.encode([question, *(span.text for _, span in candidates)])
        cosines = np.asarray(vectors[1:] @ vectors[0], dtype=float)
        terms = lexical.content_terms(question)
        w = self.config.cosine_weight
        wanted = expected_types(question) if self.config.type_bonus else frozenset()
        scored = []
        for (hit, span), cosine in zip(candidates, cosines, strict=True):
            cover = lexical.coverage(terms, lexical.content_terms(span.text))
            score = w * max(float(cosine), 0.0) + (1 - w) * cover
            bonus = self.config.type_bonus if wanted and entity_labels(span.text) & wanted else 0.0
            scored.append(ScoredSentence(hit, span, score, float(cosine), cover, score + bonus))
        scored.sort(key=lambda s: -s.rank_score)
        return scored

    def select(self, ranked: Sequence[ScoredSentence]) -> list[ScoredSentence]:
        """The answer's sentences (in page order), or [] to abstain."""
        if not ranked or max(s.score for s in ranked) < self.config.abstain_threshold:
            return []
        best = ranked[0]
        chosen = [best]
        for other in ranked[1 : self.config.max_sentences]:
            if other.rank_score >= best.rank_score - self.config.runner_up_margin:
                chosen.append(other)
        return sorted(chosen, key=lambda s: (s.retrieved.chunk.document_id, s.page_start))

    def answer(
        self, question: str, retrieved: Sequence[RetrievedChunk], *, flagged: bool = False
    ) -> GroundedAnswer:
        return self.answer_parts(question, [question], retrieved, flagged=flagged)

    def answer_parts(
        self, question: str, parts: Sequence[str], retrieved: Sequence[RetrievedChunk], *, flagged: bool = False
    ) -> GroundedAnswer:
        """One answer with a cited part per sub-question; a part without evidence leaves it PARTIAL."""
        chosen = [(part, self.select(self.rank(part, retrieved))) for part in parts]
        return compose(chosen, question, retrieved, flagged=flagged)


def citation_for(marker: int, sentence: ScoredSentence) -> Citation:
    return Citation(
        marker=marker,
        chunk=sentence.retrieved.chunk,
        char_start=sentence.page_start,
        char_end=sentence.page_end,
        excerpt=sentence.span.text,
        score=sentence.score,
    )


def compose(
    parts: Sequence[tuple[str, Sequence[ScoredSentence]]],
    question: str,
    retrieved: Sequence[RetrievedChunk],
    *,
    flagged: bool = False,
) -> GroundedAnswer:
    """One answer from the chosen sentences of each part (a part with none is unanswered)."""
    citations: list[Citation] = []
    sentences: list[AnswerSentence] = []
    unanswered = [sub for sub, chosen in parts if not chosen]
    for part, (_, chosen) in enumerate(parts):
        for sentence in chosen:
            marker = len(citations) + 1
            citations.append(citation_for(marker, sentence))
            sentences.append(AnswerSentence(" ".join(sentence.span.text.split()), (marker,), True, sentence.score, part))
    status = answer_status([True] * len(sentences), unanswered_parts=len(unanswered))
    if not sentences:
        text = REFUSAL
    else:
        text = " ".join(with_marker(s.text, s.markers[0]) for s in sentences)
        if unanswered and len(parts) > 1:
            text += " " + REFUSAL.replace("this question", "the rest of the question")
    short = ""
    if len(parts) == 1 and parts[0][1]:
        best = max(parts[0][1], key=lambda s: s.rank_score)
        found = short_answer(parts[0][0], best.span.text)
        short = found.text if found else best.span.text
    note = confidence_note(status, unanswered=unanswered if len(parts) > 1 else (), flagged=flagged)
    return GroundedAnswer(
        question=question,
        answer=text,
        citations=tuple(citations),
        retrieved=tuple(retrieved),
        support_status=status if sentences else SupportStatus.INSUFFICIENT,
        confidence_note=note,
        sentences=tuple(sentences),
        short_answer=short,
    )
