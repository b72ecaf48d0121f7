"""The reader's abstention threshold, cross-validated BY DOCUMENT on the docqa dev set.

``python -m bench.docqa_calibrate``: indexes the docqa library in process (production parsers,
chunker, stores; ``bench.docqa_corpus``), runs the production answer path once per question to
get the reader's verdict (typed span found, key terms covered) and the learned answerability,
then, holding out each document's questions in turn, picks the threshold that maximises
(answerable answered correctly + unanswerable refused) on the other documents' questions and
scores the held-out questions with it. Writes bench/results/docqa-calibration-<date>.json with
the out-of-fold (honest) figures next to the in-sample ones.

Only the threshold is refitted here: the sentence and answerability logistic models are still
the SQuAD 2.0 fit of ``bench.calibrate_abstention``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bench.corpus import DiskCachedEncoder
from bench.docqa_bench import RESULTS, load_items, library, reply_from_domain
from bench.docqa_corpus import DocumentCorpus
from bench.docqa_score import Item, score

GRID = tuple(round(x, 3) for x in np.linspace(0.0, 0.5, 51))


@dataclass(frozen=True)
class Sample:
    item: Item
    supported: bool
    """The reader's own checks passed (type, key terms); table cells skip the threshold."""
    from_table: bool
    answerability: float
    correct_if_answered: bool


def collect(corpus: DocumentCorpus, items: Sequence[Item]) -> list[Sample]:
    service = corpus.answer_service()
    engine = service.extractive
    samples = []
    for item in items:
        retrieved = asyncio.run(service.retrieve(corpus.TENANT, _request(item.question)))
        reading, answerability = engine.reading(item.question, retrieved)
        saved = engine.config
        engine.config = type(saved)(**{**saved.__dict__, "read_threshold": 0.0})
        try:
            answer = engine.answer(item.question, retrieved)
        finally:
            engine.config = saved
        outcome = score(item, reply_from_domain(answer, 0.0))
        correct = outcome.correct if item.answerable else False
        samples.append(Sample(item, bool(reading and reading.supported), bool(reading and reading.from_table),
                              answerability, correct))
    return samples


def _request(question: str):
    from services.rag.answers.answering import QueryRequest

    return QueryRequest(question, 0, ())


def outcomes(samples: Sequence[Sample], threshold: float) -> dict:
    answered = [s.supported and (s.from_table or s.answerability >= threshold) for s in samples]
    answerable = [(s, a) for s, a in zip(samples, answered, strict=True) if s.item.answerable]
    unanswerable = [a for s, a in zip(samples, answered, strict=True) if not s.item.answerable]
    return {
        "answer_correct": round(float(np.mean([a and s.correct_if_answered for s, a in answerable])), 4),
        "answered_rate": round(float(np.mean([a for _, a in answerable])), 4),
        "abstention_unanswerable": round(float(np.mean([not a for a in unanswerable])), 4) if unanswerable else None,
    }


def objective(samples: Sequence[Sample], threshold: float) -> float:
    total = 0
    for s in samples:
        answered = s.supported and (s.from_table or s.answerability >= threshold)
        total += (answered and s.correct_if_answered) if s.item.answerable else (not answered)
    return total


def best_threshold(samples: Sequence[Sample]) -> float:
    scores = [objective(samples, t) for t in GRID]
    top = max(scores)
    return GRID[scores.index(top)]  # the lowest threshold reaching the best score


def cross_validate(samples: Sequence[Sample]) -> dict:
    files = sorted({s.item.file for s in samples})
    held: list[tuple[Sample, float]] = []
    chosen = {}
    for name in files:
        train = [s for s in samples if s.item.file != name]
        threshold = best_threshold(train)
        chosen[name] = threshold
        held += [(s, threshold) for s in samples if s.item.file == name]
    answered = [s.supported and (s.from_table or s.answerability >= t) for s, t in held]
    answerable = [(s, a) for (s, _), a in zip(held, answered, strict=True) if s.item.answerable]
    unanswerable = [a for (s, _), a in zip(held, answered, strict=True) if not s.item.answerable]
    return {
        "folds": len(files),
        "thresholds": chosen,
        "answer_correct": round(float(np.mean([a and s.correct_if_answered for s, a in answerable])), 4),
        "answered_rate": round(float(np.mean([a for _, a in answerable])), 4),
        "abstention_unanswerable": round(float(np.mean([not a for a in unanswerable])), 4),
    }


def main() -> dict:
    items = load_items()
    encoder = DiskCachedEncoder("docqa")
    corpus = DocumentCorpus(encoder)
    try:
        corpus.add_files(library(items))
        samples = collect(corpus, items)
    finally:
        corpus.close()
    fitted = best_threshold(samples)
    results = {
        "benchmark": "docqa-calibration",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "description": "reader abstention threshold over the learned answerability; leave-one-document-out CV "
                       "on the docqa dev set (questions grouped by their gold file)",
        "in_sample_threshold": fitted,
        "in_sample": outcomes(samples, fitted),
        "cross_validated_by_document": cross_validate(samples),
        "reader_supported_rate": round(float(np.mean([s.supported for s in samples])), 4),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"docqa-calibration-{dt.date.today().isoformat()}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: v for k, v in results.items() if k != "cross_validated_by_document"}, indent=2))
    print(json.dumps({k: v for k, v in results["cross_validated_by_document"].items() if k != "thresholds"}))
    print(f"[docqa-calibrate] wrote {path}")
    return results


if __name__ == "__main__":
    main()
