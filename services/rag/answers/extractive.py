"""The offline answer engine: the evidence unit the learned ranker trusts most, cited, with its short answer.

Every unit of the evidence pool (sentences, table rows with their headers, form fields, list items:
``units``) gets general features (``unit_features``) and a probability of holding the answer from one
learned model (``ranker``, gradient-boosted trees trained out of fold by document). The best unit
answers when its probability reaches the threshold chosen out of fold; otherwise the answer is the
fixed refusal. The answer text leads with the short answer (a row's cell, a field's value, a span of the
asked-for type: ``short_answers``), then quotes the unit; the citation carries the unit's exact offsets
in the page text and, for a cell, its row and column. Nothing else decides: no answer-type gate, no
key-term or label rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from services.rag.answers import aggregates, summaries
from services.rag.answers.answer_types import classify
from services.rag.answers.generative import CandidateCell
from services.rag.answers.model import REFUSAL, AnswerSentence, Citation, GroundedAnswer, SupportStatus, with_marker
from services.rag.answers.ranker import AnswerRanker, shipped
from services.rag.answers.sentences import Span
from services.rag.answers.short_answers import ShortAnswer, for_unit
from services.rag.answers.support import answer_status, confidence_note
from services.rag.answers.tables import tables_in
from services.rag.answers.unit_features import feature_matrix
from services.rag.answers.units import Unit, UnitKind, units
from services.rag.documents import Chunk
from services.rag.retrieval import RetrievedChunk
from services.rag.retrieval.ports import QueryEncoder


@dataclass(frozen=True)
class ExtractiveConfig:
    abstain_threshold: float | None = None
    """Probability of the best unit under which the engine abstains; None: the ranker's own (chosen out of fold)."""


@dataclass(frozen=True)
class ScoredUnit:
    unit: Unit
    score: float
    """Probability that this unit holds the answer (the learned ranker)."""
    features: tuple[float, ...] = ()

    @property
    def retrieved(self) -> RetrievedChunk:
        return self.unit.hit

    @property
    def span(self) -> Span:
        return self.unit.span

    @property
    def rank_score(self) -> float:
        return self.score

    @property
    def page_start(self) -> int:
        return self.unit.page_start

    @property
    def page_end(self) -> int:
        return self.unit.page_end


DocumentChunks = Callable[[str, str], Sequence[Chunk]]
"""``document_chunks(tenant, document_id)``: every chunk of a document, in order (``ChunkIndex.document_chunks``)."""


class ExtractiveAnswerer:
    def __init__(self, encoder: QueryEncoder, config: ExtractiveConfig | None = None,
                 ranker: AnswerRanker | None = None, document_chunks: DocumentChunks | None = None) -> None:
        """``document_chunks``: whole documents, for summaries and computations over a table (else lookups only)."""
        self._encoder = encoder
        self.config = config or ExtractiveConfig()
        self.ranker = ranker or shipped()
        self._document_chunks = document_chunks

    @property
    def threshold(self) -> float:
        return self.ranker.threshold if self.config.abstain_threshold is None else self.config.abstain_threshold

    def similarity(self, question: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        vectors = self._encoder.encode([question, *texts])
        return np.asarray(vectors[1:] @ vectors[0], dtype=float)

    def rank(self, question: str, retrieved: Sequence[RetrievedChunk]) -> list[ScoredUnit]:
        """The pool's units, most likely to hold the answer first."""
        found = units(retrieved)
        if not found:
            return []
        matrix = feature_matrix(question, found, self.similarity)
        probabilities = self.ranker.probabilities(matrix)
        scored = [ScoredUnit(u, float(p), tuple(row)) for u, p, row in zip(found, probabilities, matrix, strict=True)]
        scored.sort(key=lambda s: -s.score)
        return scored

    def candidate_cells(self, question: str, ranked: Sequence[ScoredUnit], limit: int = 8) -> list[CandidateCell]:
        """The best-ranked table rows and form fields as cells (for the generative path's context)."""
        cells: list[CandidateCell] = []
        for s in ranked:
            if len(cells) >= limit:
                break
            unit = s.unit
            if unit.kind not in (UnitKind.ROW, UnitKind.FIELD):
                continue
            short = for_unit(question, unit, self.similarity)
            if short is None or short.start < 0:
                continue
            cells.append(CandidateCell(unit.hit.chunk.chunk_id, unit.span.start, unit.span.end,
                                       short.row_label or unit.label, short.column_header or unit.label, short.text,
                                       short.start, short.end))
        return cells

    def answerability(self, ranked: Sequence[ScoredUnit]) -> float:
        """Probability that the best unit answers the question (0 with none)."""
        return ranked[0].score if ranked else 0.0

    def order_chunks(self, ranked: Sequence[ScoredUnit], pool: Sequence[RetrievedChunk]) -> list[RetrievedChunk]:
        """The pool reordered by each chunk's best unit (chunks without a unit keep their place at the end)."""
        best: dict[str, float] = {}
        for s in ranked:
            best.setdefault(s.unit.hit.chunk.chunk_id, s.score)
        return sorted(pool, key=lambda h: -best.get(h.chunk.chunk_id, -1.0))

    def answer(self, question: str, retrieved: Sequence[RetrievedChunk], *, flagged: bool = False,
               shown: int = 0) -> GroundedAnswer:
        return self.answer_parts(question, [question], retrieved, flagged=flagged, shown=shown)

    def answer_parts(self, question: str, parts: Sequence[str], retrieved: Sequence[RetrievedChunk], *,
                     flagged: bool = False, shown: int = 0) -> GroundedAnswer:
        """One cited unit per (sub-)question whose best unit clears the threshold; the rest are unanswered.

        The answer's ``retrieved`` are the ``shown`` chunks (0: all) holding the best units, best first."""
        if len(parts) == 1 and retrieved and self._document_chunks is not None:
            computed = self.summary(question, retrieved) or self.aggregate(question, retrieved)
            if computed is not None:
                return computed
        chosen: list[tuple[str, ScoredUnit | None]] = []
        best_of: dict[str, float] = {}
        for part in parts:
            ranked = self.rank(part, retrieved)
            best = ranked[0] if ranked and ranked[0].score >= self.threshold else None
            chosen.append((part, best))
            for s in ranked:
                key = s.unit.hit.chunk.chunk_id
                best_of[key] = max(best_of.get(key, -1.0), s.score)
        ordered = sorted(retrieved, key=lambda h: -best_of.get(h.chunk.chunk_id, -1.0))
        return self.compose(question, chosen, ordered[:shown] if shown else ordered, flagged=flagged)

    def summary(self, question: str, retrieved: Sequence[RetrievedChunk]) -> GroundedAnswer | None:
        """A summary question answered by the central sentences of the document it is about, each cited."""
        if not summaries.asks_for_summary(question) or self._document_chunks is None:
            return None
        document = summaries.target_document(retrieved)
        tenant = retrieved[0].chunk.tenant
        chunks = list(self._document_chunks(tenant, document)) if document else []
        picked = summaries.central_sentences(chunks, self._encoder.encode)
        if not picked:
            return None
        citations, sentences, texts = [], [], []
        for marker, (chunk, start, end, text) in enumerate(picked, 1):
            base = chunk.provenance.char_start
            citations.append(Citation(marker=marker, chunk=chunk, char_start=base + start, char_end=base + end,
                                      excerpt=text, score=1.0, answer_type="summary"))
            sentences.append(AnswerSentence(" ".join(text.split()), (marker,), True, 1.0, 0))
            texts.append(with_marker(text, marker))
        name = picked[0][0].provenance.filename
        status = SupportStatus.SUPPORTED
        return GroundedAnswer(question, f"Summary of {name}: " + " ".join(texts), tuple(citations), tuple(retrieved),
                              status, confidence_note(status), tuple(sentences), answer_type="summary")

    def aggregate(self, question: str, retrieved: Sequence[RetrievedChunk]) -> GroundedAnswer | None:
        """"Which row has the highest X", "how many rows": computed over the whole table the evidence's rows are from."""
        kind = aggregates.asked(question)
        if kind is None or self._document_chunks is None:
            return None
        ranked = self.rank(question, retrieved)
        if not any(tabular(s.unit) for s in ranked[:2]):
            return None  # the best evidence is not a table: a superlative about prose is a lookup
        rows = [s for s in ranked[:10] if s.unit.kind is UnitKind.ROW and s.unit.header_cells]
        for scored in rows[:3]:
            header = [c.text for c in scored.unit.header_cells]
            chunks = self._document_chunks(scored.unit.hit.chunk.tenant, scored.unit.document_id)
            found = aggregates.compute(question, kind, header, chunks, self.similarity)
            if found is not None:
                return self._aggregate_answer(question, found, retrieved)
        return None

    def _aggregate_answer(self, question: str, found: aggregates.Aggregate,
                          retrieved: Sequence[RetrievedChunk]) -> GroundedAnswer:
        chunk, row = found.chunk, found.row
        base = chunk.provenance.char_start
        excerpt = chunk.text[row.start:row.end]
        if found.kind == "count":
            text = f"{found.rows} rows are listed in the table with the columns: {excerpt.strip()}"
            short = str(found.rows)
        else:
            word = "highest" if found.kind == "max" else "lowest"
            text = f"{found.label} has the {word} {found.column}: {found.value}"
            short = found.value
        cell = found.cell
        citation_ = Citation(
            marker=1, chunk=chunk, char_start=base + row.start, char_end=base + row.end, excerpt=excerpt, score=1.0,
            row_label=found.label, column_header=found.column, short_answer=short, answer_type=f"aggregate_{found.kind}",
            answer_start=base + cell.start if cell else -1, answer_end=base + cell.end if cell else -1)
        status = SupportStatus.SUPPORTED
        return GroundedAnswer(question, with_marker(text, 1), (citation_,), tuple(retrieved), status,
                              confidence_note(status), (AnswerSentence(text, (1,), True, 1.0, 0),), short_answer=short,
                              answer_type=f"aggregate_{found.kind}")

    def compose(self, question: str, chosen: Sequence[tuple[str, ScoredUnit | None]],
                retrieved: Sequence[RetrievedChunk], *, flagged: bool = False) -> GroundedAnswer:
        citations: list[Citation] = []
        sentences: list[AnswerSentence] = []
        texts: list[str] = []
        unanswered = [part for part, best in chosen if best is None]
        short_text = ""
        answer_type = classify(question).value if len(chosen) == 1 else ""
        for index, (part, best) in enumerate(chosen):
            if best is None:
                continue
            marker = len(citations) + 1
            short = for_unit(part, best.unit, self.similarity)
            citations.append(citation(marker, best, short, classify(part).value))
            text = presented(best.unit, short)
            texts.append(with_marker(text, marker))
            sentences.append(AnswerSentence(text, (marker,), True, best.score, index))
            if len(chosen) == 1:
                short_text = short.text if short is not None else " ".join(best.unit.text.split())
        status = answer_status([True] * len(sentences), unanswered_parts=len(unanswered))
        if not sentences:
            text = REFUSAL
        else:
            text = " ".join(texts)
            if unanswered and len(chosen) > 1:
                text += " " + REFUSAL.replace("this question", "the rest of the question")
        note = confidence_note(status if sentences else SupportStatus.INSUFFICIENT,
                               unanswered=unanswered if len(chosen) > 1 else (), flagged=flagged)
        return GroundedAnswer(
            question=question, answer=text, citations=tuple(citations), retrieved=tuple(retrieved),
            support_status=status if sentences else SupportStatus.INSUFFICIENT, confidence_note=note,
            sentences=tuple(sentences), short_answer=short_text, answer_type=answer_type,
        )


def tabular(unit: Unit) -> bool:
    """A table row, or a table's header line (which the sentence splitter leaves a unit of its own)."""
    if unit.kind is UnitKind.ROW:
        return True
    return any(t.header is not None and t.header.start <= unit.span.start < t.header.end
               for t in tables_in(unit.hit.chunk.text))


def presented(unit: Unit, short: ShortAnswer | None) -> str:
    """The short answer first, then the quote that supports it ("245 — Duster 360 | 14.3 | 8 | 245")."""
    quote = " ".join(unit.text.split())
    if short is None:
        return quote
    value = " ".join(short.text.split())
    if not value or value == quote or len(value) >= len(quote):
        return quote
    if short.column_header and short.row_label:
        return f"{value} ({short.column_header}, {short.row_label}): “{quote}”"
    return f"{value}: “{quote}”"


def citation(marker: int, scored: ScoredUnit, short: ShortAnswer | None, answer_type: str = "") -> Citation:
    unit = scored.unit
    base = unit.hit.chunk.provenance.char_start
    return Citation(
        marker=marker, chunk=unit.hit.chunk, char_start=unit.page_start, char_end=unit.page_end, excerpt=unit.text,
        score=scored.score, row_label=short.row_label if short else "", column_header=short.column_header if short else "",
        short_answer=short.text if short else "", answer_type=answer_type,
        answer_start=base + short.start if short and short.start >= 0 else -1,
        answer_end=base + short.end if short and short.end >= 0 else -1,
    )


def citation_for(marker: int, scored: ScoredUnit) -> Citation:
    """A unit's citation without a short answer (the analysis pipeline's sentences)."""
    return citation(marker, scored, None)
