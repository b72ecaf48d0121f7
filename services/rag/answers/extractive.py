"""The offline answer engine: the best-supported sentence of the retrieved chunks, cited.

Every sentence of every retrieved chunk is a candidate (planted instructions never are). Each
gets generic evidence features (``features``: MiniLM cosine, idf-weighted coverage of the
question's terms by the sentence, its neighbours and its chunk, verbatim runs, missing names
and numbers, answer-type match, negation, retrieval rank ...) and a learned probability of
holding the answer (``scoring``); the best one answers. A second learned model reads the best
candidate and its lead over the rest and says whether the question is answered at all; under
the calibrated threshold the answer is the fixed refusal sentence. Citations carry exact
offsets in the page text: ``provenance.char_start`` + the sentence's offset in the chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from services.rag.answers import answer_model, lexical
from services.rag.answers.features import FEATURE_NAMES, Candidate, feature_matrix
from services.rag.answers.injection import is_instruction
from services.rag.answers.answer_types import TYPED, AnswerType
from services.rag.answers.reader import Reader, Reading
from services.rag.answers.model import REFUSAL, AnswerSentence, Citation, GroundedAnswer, SupportStatus, with_marker
from services.rag.answers.sentences import Span, split_sentences
from services.rag.answers.scoring import AnswerScorer, sigmoid
from services.rag.answers.spans import short_answer
from services.rag.answers.support import answer_status, confidence_note
from services.rag.retrieval import RetrievedChunk
from services.rag.retrieval.ports import QueryEncoder

ABSTAIN_THRESHOLD = answer_model.THRESHOLD
"""Answerability probability under which the engine abstains (see ``answer_model`` for how it was fitted)."""


@dataclass(frozen=True)
class ExtractiveConfig:
    abstain_threshold: float = ABSTAIN_THRESHOLD
    max_sentences: int = 1
    """One sentence per (sub-)question: on SQuAD a runner-up within the margin lowered citation
    precision from 0.74 to 0.68 (bench/squad.py, all answerable dev questions) for little added answer."""
    runner_up_margin: float = 0.03
    """A second sentence joins the answer only when its probability is within this of the best."""
    min_words: int = 3
    """Shorter fragments (headings, table labels) are not answers on their own."""
    read: bool = True
    """Answer one-part questions with the typed reader (``reader``): short typed answers, table cells, lists."""
    read_threshold: float = 0.05
    """Answerability under which a reader's sentence answer abstains (its type and key-term checks come first)."""
    soft_threshold: float = 0.2
    """The same for a who/where answer without an entity of the asked-for type: the learned vote is all that
    speaks for it, so it must speak clearly."""


@dataclass(frozen=True)
class ScoredSentence:
    retrieved: RetrievedChunk
    span: Span
    """Offsets inside the chunk text."""
    score: float
    """Probability that this sentence holds the answer (the learned sentence model)."""
    cosine: float
    coverage: float
    rank_score: float = 0.0
    """What candidates are ordered by (the sentence model's decision value)."""
    features: tuple[float, ...] = ()
    """The sentence's ``features.FEATURE_NAMES`` row, kept for the answerability model."""

    @property
    def page_start(self) -> int:
        return self.retrieved.chunk.provenance.char_start + self.span.start

    @property
    def page_end(self) -> int:
        return self.retrieved.chunk.provenance.char_start + self.span.end


class ExtractiveAnswerer:
    def __init__(self, encoder: QueryEncoder, config: ExtractiveConfig | None = None,
                 scorer: AnswerScorer | None = None) -> None:
        self._encoder = encoder
        self.config = config or ExtractiveConfig()
        self.scorer = scorer or AnswerScorer.shipped()
        self.reader = Reader(self._similarity)

    def _similarity(self, question: str, texts: list[str]) -> np.ndarray:
        vectors = self._encoder.encode([question, *texts])
        return np.asarray(vectors[1:] @ vectors[0], dtype=float)

    def candidates(self, retrieved: Sequence[RetrievedChunk]) -> list[tuple[RetrievedChunk, Span, Candidate]]:
        """Every sentence of the retrieved chunks once (chunk overlaps repeat them), in retrieval order."""
        found: list[tuple[RetrievedChunk, Span, Candidate]] = []
        seen: set[tuple[str, int, int]] = set()
        for rank, hit in enumerate(retrieved):
            p = hit.chunk.provenance
            source = " ".join((p.filename.rsplit(".", 1)[0], *p.heading_path))
            spans = split_sentences(hit.chunk.text)
            for i, span in enumerate(spans):
                key = (p.document_id, p.section_index, p.char_start + span.start)
                if key in seen or len(lexical.tokens(span.text)) < self.config.min_words or is_instruction(span.text):
                    continue
                seen.add(key)
                window = hit.chunk.text[spans[max(i - 1, 0)].start : spans[min(i + 1, len(spans) - 1)].end]
                found.append((hit, span, Candidate(span.text, window, hit.chunk.text, rank, hit.score, source)))
        return found

    def features(self, question: str, retrieved: Sequence[RetrievedChunk]
                 ) -> tuple[list[tuple[RetrievedChunk, Span, Candidate]], np.ndarray]:
        """The candidates and their feature matrix (one ``FEATURE_NAMES`` row each)."""
        found = self.candidates(retrieved)
        if not found:
            return [], np.zeros((0, len(FEATURE_NAMES)))
        vectors = self._encoder.encode([question, *(c.text for _, _, c in found)])
        cosines = np.asarray(vectors[1:] @ vectors[0], dtype=float)
        return found, feature_matrix(question, [c for _, _, c in found], cosines)

    def rank(self, question: str, retrieved: Sequence[RetrievedChunk]) -> list[ScoredSentence]:
        """Candidate sentences, most likely to hold the answer first."""
        found, matrix = self.features(question, retrieved)
        if not found:
            return []
        decisions = self.scorer.sentence_decisions(matrix)
        probabilities = np.asarray(sigmoid(decisions))
        cosine, coverage = FEATURE_NAMES.index("cosine"), FEATURE_NAMES.index("coverage")
        scored = [
            ScoredSentence(hit, span, float(p), float(row[cosine]), float(row[coverage]), float(d), tuple(row))
            for (hit, span, _), row, d, p in zip(found, matrix, decisions, probabilities, strict=True)
        ]
        scored.sort(key=lambda s: -s.rank_score)
        return scored

    def answerability(self, ranked: Sequence[ScoredSentence]) -> float:
        """Probability that the best-ranked sentence answers the question (0 with none)."""
        if not ranked:
            return 0.0
        matrix = np.asarray([s.features for s in ranked], dtype=float)
        return self.scorer.answerable(matrix, np.asarray([s.rank_score for s in ranked]))

    def select(self, ranked: Sequence[ScoredSentence]) -> list[ScoredSentence]:
        """The answer's sentences (in page order), or [] to abstain."""
        if not ranked or self.answerability(ranked) < self.config.abstain_threshold:
            return []
        best = ranked[0]
        chosen = [best]
        for other in ranked[1 : self.config.max_sentences]:
            if other.score >= best.score - self.config.runner_up_margin:
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
        if self.config.read and len(parts) == 1:
            return self.answer_read(question, parts[0], retrieved, flagged=flagged)
        chosen = [(part, self.select(self.rank(part, retrieved))) for part in parts]
        return compose(chosen, question, retrieved, flagged=flagged)


    def reading(self, question: str, retrieved: Sequence[RetrievedChunk]) -> tuple[Reading | None, float]:
        """The reader's answer and the learned answerability of the ranked evidence."""
        ranked = self.rank(question, retrieved)
        return self.reader.read(question, ranked, retrieved), self.answerability(ranked)

    def accepts(self, reading: Reading | None, answerability: float) -> bool:
        """SUPPORTED needs the asked-for type, the key terms covered, and (for sentences) the learned threshold."""
        if reading is None or not reading.supported:
            return False
        # A span of the asked-for type whose evidence holds every key term needs no learned vote.
        typed_and_covered = (reading.kind in TYPED and not reading.soft and reading.coverage >= 0.75
                             and reading.unseen_terms == 0)
        # So does a value the document labels with the attribute asked about ("Fax: ...", "four lines of code").
        labelled = (reading.labelled or 0) >= 1 and not reading.soft
        threshold = self.config.soft_threshold if reading.soft else self.config.read_threshold
        return reading.from_table or typed_and_covered or labelled or answerability >= threshold

    def answer_read(self, question: str, asked: str, retrieved: Sequence[RetrievedChunk], *,
                    flagged: bool = False) -> GroundedAnswer:
        reading, answerability = self.reading(asked, retrieved)
        if not self.accepts(reading, answerability):
            note = confidence_note(SupportStatus.INSUFFICIENT, flagged=flagged)
            return GroundedAnswer(question, REFUSAL, (), tuple(retrieved), SupportStatus.INSUFFICIENT, note,
                                  answer_type=reading.kind.value if reading else "")
        assert reading is not None
        citation = reading_citation(1, reading, answerability)
        text = with_marker(answer_text(reading), 1)
        sentence = AnswerSentence(" ".join(answer_text(reading).split()), (1,), True, answerability, 0)
        return GroundedAnswer(
            question=question, answer=text, citations=(citation,), retrieved=tuple(retrieved),
            support_status=SupportStatus.SUPPORTED, confidence_note=confidence_note(SupportStatus.SUPPORTED, flagged=flagged),
            sentences=(sentence,), short_answer=reading.short, answer_type=reading.kind.value,
        )


SHORT_KINDS = TYPED | {AnswerType.DEFINITION}
"""Answer types whose short answer leads the answer text (a free-text answer is its sentence)."""


def answer_text(reading: Reading) -> str:
    """The short answer and where it comes from: the sentence, the table row and column, or the list."""
    source = " ".join(reading.source.text.split())
    short = " ".join(reading.short.split())
    if reading.from_table:
        return f"{short} ({reading.column_header} for {reading.row_label}; row: {source})"
    if reading.items:
        return f"{short} (from: {source})"
    if reading.kind not in SHORT_KINDS or not short or short == source or len(short) >= len(source):
        return source
    return f"{short}: {source}"


def reading_citation(marker: int, reading: Reading, score: float) -> Citation:
    base = reading.hit.chunk.provenance.char_start
    return Citation(
        marker=marker, chunk=reading.hit.chunk, char_start=base + reading.source.start, char_end=base + reading.source.end,
        excerpt=reading.source.text, score=score, row_label=reading.row_label, column_header=reading.column_header,
        short_answer=reading.short, answer_type=reading.kind.value,
        answer_start=base + reading.short_start if reading.short_start >= 0 else -1,
        answer_end=base + reading.short_end if reading.short_end >= 0 else -1,
    )


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
