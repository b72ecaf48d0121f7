"""SQuAD 2.0 answer quality: evidence@5, EM / token F1, abstention, citation precision.

The 8 dev articles and 20 distractor articles are indexed together by the production code,
one document per article (paragraphs joined by blank lines), so every gold answer has exact
offsets in its document's text. Each dev question goes through the production path: hybrid
retrieval (default fusion) of the answer pool, as ``AnswerService`` does, then the extractive engine
with the shipped answer ranker and its threshold. The ranker was trained with these articles among
its data (``bench.answer_training``): the figures here are in-sample; the out-of-fold figures by
document are in the ranker's manifest (``services/rag/answers/models/unit_ranker.json``).

- evidence@5: share of answerable questions whose gold answer span lies inside one of the top 5
  retrieved chunks (same article, offsets covering the span);
- EM / F1: the engine's short answer against the gold answers (official normalisation); an
  abstention scores 0, as in SQuAD 2.0; also reported over answered questions only;
- answer rate (answerable answered) and abstention rate (unanswerable refused);
- citation precision: share of the citations given on answerable questions whose span contains
  a gold answer span.
"""

from __future__ import annotations

import gzip
import json
import pathlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

from bench.corpus import BenchCorpus, DiskCachedEncoder
from bench.metrics import exact_match, mean, token_f1
from bench.shared import SHARED
from services.rag.answers.answering import pool_size
from services.rag.answers.extractive import ExtractiveAnswerer, ExtractiveConfig
from services.rag.retrieval import HybridRetriever, RetrievalConfig

DATA = SHARED / "data" / "squad"
QUICK_QUESTIONS = 400
SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    article: str
    answers: tuple[tuple[str, int], ...]
    """Gold answers as (text, start offset in the article's document text)."""

    @property
    def answerable(self) -> bool:
        return bool(self.answers)


def load(data: pathlib.Path = DATA) -> tuple[dict[str, str], list[Question]]:
    articles: dict[str, str] = {}
    questions: list[Question] = []
    for name, with_questions in (("dev.json.gz", True), ("distractors.json.gz", False)):
        with gzip.open(data / name, "rt") as fh:
            for article in json.load(fh)["data"]:
                title = article["title"]
                offset, parts = 0, []
                for paragraph in article["paragraphs"]:
                    context = paragraph["context"]
                    if with_questions:
                        for qa in paragraph["qas"]:
                            golds = () if qa.get("is_impossible") else tuple(
                                (a["text"], offset + a["answer_start"]) for a in qa["answers"])
                            questions.append(Question(qa["id"], qa["question"], title, golds))
                    parts.append(context)
                    offset += len(context) + len(SEPARATOR)
                articles[title] = SEPARATOR.join(parts)
    return articles, questions


def covers(start: int, end: int, golds: Sequence[tuple[str, int]]) -> bool:
    return any(start <= g_start and g_start + len(text) <= end for text, g_start in golds)


@dataclass(frozen=True)
class Outcome:
    question: Question
    evidence_at_5: bool
    best_score: float
    answered: bool
    short_answer: str
    citations: tuple[tuple[int, int], ...]
    """(start, end) in the article text of each citation in the right article; (-1, -1) elsewhere."""
    best_sentence: str = ""
    best_context: str = ""
    """The chunk holding the best sentence."""
    fused_evidence_at_5: bool = False
    """evidence@5 of the fused order, before the answer path reorders the pool."""


def evaluate_questions(corpus: BenchCorpus, questions: Sequence[Question], encoder,
                       abstain_threshold: float | None = None) -> list[Outcome]:
    retriever = HybridRetriever(corpus.index, encoder, RetrievalConfig())
    config = ExtractiveConfig() if abstain_threshold is None else ExtractiveConfig(abstain_threshold=abstain_threshold)
    engine = ExtractiveAnswerer(encoder, config)
    k = retriever.config.default_top_k
    outcomes = []
    for q in questions:
        # The answer path's evidence (AnswerService.evidence_for), and the top_k chunks it shows (best units first).
        pool = retriever.retrieve(BenchCorpus.TENANT, q.text, pool_size(k))
        holds = lambda hits, q=q: any(  # noqa: E731
            corpus.by_document_id[h.chunk.document_id].key == q.article
            and covers(h.chunk.provenance.char_start, h.chunk.provenance.char_end, q.answers) for h in hits[:5])
        ranked = engine.rank(q.text, pool)
        retrieved = engine.order_chunks(ranked, pool)[:k]
        answer = engine.answer(q.text, pool, shown=k)
        spans = tuple(
            (c.char_start, c.char_end) if corpus.by_document_id[c.chunk.document_id].key == q.article else (-1, -1)
            for c in answer.citations
        )
        best = ranked[0] if ranked else None
        outcomes.append(Outcome(q, holds(retrieved), engine.answerability(ranked), not answer.abstained,
                                answer.short_answer, spans, best.span.text if best else "",
                                best.retrieved.chunk.text if best else "", holds(pool)))
    return outcomes


def engine_version() -> dict:
    from services.rag.answers.ranker import shipped

    ranker = shipped()
    return {"version": ranker.version, "threshold": ranker.threshold}


def summarise(outcomes: Sequence[Outcome]) -> dict:
    answerable = [o for o in outcomes if o.question.answerable]
    unanswerable = [o for o in outcomes if not o.question.answerable]
    answered = [o for o in answerable if o.answered]
    golds = lambda o: [t for t, _ in o.question.answers]  # noqa: E731
    citations = [covers(s, e, o.question.answers) for o in answered for s, e in o.citations]
    return {
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "evidence@5": round(mean([float(o.evidence_at_5) for o in answerable]), 4),
        "evidence@5_fused_order": round(mean([float(o.fused_evidence_at_5) for o in answerable]), 4),
        "exact_match": round(mean([exact_match(o.short_answer, golds(o)) if o.answered else 0.0 for o in answerable]), 4),
        "f1": round(mean([token_f1(o.short_answer, golds(o)) if o.answered else 0.0 for o in answerable]), 4),
        "exact_match_answered": round(mean([exact_match(o.short_answer, golds(o)) for o in answered]), 4),
        "f1_answered": round(mean([token_f1(o.short_answer, golds(o)) for o in answered]), 4),
        "answer_rate_answerable": round(len(answered) / max(len(answerable), 1), 4),
        "abstention_rate_unanswerable": round(mean([float(not o.answered) for o in unanswerable]), 4),
        "citation_precision": round(mean([float(c) for c in citations]), 4),
        "citations": len(citations),
    }


def sample(questions: list[Question], quick: bool, seed: int = 7) -> list[Question]:
    if not quick:
        return questions
    return random.Random(seed).sample(questions, min(QUICK_QUESTIONS, len(questions)))


def build(encoder: DiskCachedEncoder) -> tuple[BenchCorpus, list[Question]]:
    articles, questions = load()
    corpus = BenchCorpus(encoder)
    corpus.add(articles.items())
    return corpus, questions


def run(quick: bool, encoder: DiskCachedEncoder | None = None) -> dict:
    encoder = encoder or DiskCachedEncoder("squad")
    corpus, questions = build(encoder)
    try:
        chosen = sample(questions, quick)
        outcomes = evaluate_questions(corpus, chosen, encoder)
        encoder.save()
        return {"articles": len(corpus.documents), "chunks": corpus.chunk_count, "questions": len(chosen),
                "index_seconds": round(corpus.index_seconds, 1),
                "answer_ranker": engine_version(), **summarise(outcomes)}
    finally:
        corpus.close()
