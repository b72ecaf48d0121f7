"""Fits the reader's acceptance model on docqa dev AND SQuAD 2.0 together, cross-validated by document.

``python -m bench.docqa_calibrate [--dry-run]``:
1. indexes the docqa library in process (production parsers, chunker, stores; ``bench.docqa_corpus``)
   and the SQuAD 2.0 dev articles with their distractors (``bench.squad``);
2. runs the production answer path on every docqa question and on a seeded sample of SQuAD
   questions kept apart from the ``make bench-quality --quick`` sample, and keeps, per question,
   the reader's verdict (``Reading.supported``, table cell or not), its
   ``acceptance.FEATURE_NAMES`` row, and whether the answer it would give is right (docqa: the
   set's matching rule; SQuAD: the cited sentence covers a gold answer span);
3. cross-validates by document: each docqa file and each SQuAD article is held out in turn; a
   logistic model and a threshold fitted on the other documents' questions decide the held-out
   ones. The threshold is the highest that keeps ``KEEP`` of the answerable questions the reader
   supports (the two sets' shares averaged);
4. writes the model fitted on everything to ``services/rag/answers/reader_model.py`` and the
   figures (out-of-fold, in-sample, and the shipped rule it replaces on the same questions, per
   set) to ``bench/results/docqa-calibration-<date>.json``.

Seeds are fixed (SQuAD sample, solver); the same code and data refit the same coefficients.
The sentence and SQuAD answerability models (``answer_model.py``) stay the SQuAD fit of
``bench.calibrate_abstention``: here their outputs are features.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import pathlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from sklearn.linear_model import LogisticRegression

from bench.corpus import DiskCachedEncoder
from bench.docqa_bench import RESULTS, library, load_items, reply_from_domain
from bench.docqa_corpus import DocumentCorpus
from bench.docqa_score import score
from services.rag.answers.acceptance import FEATURE_NAMES

MODEL_FILE = pathlib.Path(__file__).resolve().parents[1] / "services" / "rag" / "answers" / "reader_model.py"
SQUAD_SAMPLE = 600
SEED = 11
REGULARISATION = 0.5
DOCQA_WEIGHT = 1.0
"""Weight of a docqa question against a SQuAD one in the fit (4.0 did no better out of fold)."""
KEEP = 0.85
"""Share of the reader-supported answerable questions the vote keeps (0.8 refused more unanswerable
docqa questions but lost right answers out of fold; 0.9 kept more wrong ones)."""
GRID = tuple(round(float(x), 3) for x in np.linspace(0.01, 0.9, 90))


@dataclass(frozen=True)
class Sample:
    dataset: str
    group: str
    """The document the question is about: docqa gold file, SQuAD article."""
    answerable: bool
    read: bool
    """One-part question answered by the reader (others are not put to the model)."""
    supported: bool
    from_table: bool
    row: tuple[float, ...]
    correct_if_answered: bool
    shipped_accepts: bool = False
    """What the code before this model did with it (for the side-by-side)."""
    top_correct: bool = False
    """SQuAD: the sentence model's best sentence covers a gold span (the reader's choice against it)."""


def _legacy_accepts(reading, row: np.ndarray) -> bool:
    """The rule this model replaces: typed and covered needs no vote, else SQuAD answerability >= 0.05."""
    if reading is None or not reading.supported:
        return False
    typed_and_covered = row[FEATURE_NAMES.index("typed_and_covered")] > 0
    answerability = 1 / (1 + np.exp(-row[FEATURE_NAMES.index("answerability_logit")]))
    return bool(reading.from_table or typed_and_covered or answerability >= 0.05)


def _sample(dataset: str, group: str, answerable: bool, reading, row, correct: bool) -> Sample:
    if reading is None or row is None:
        return Sample(dataset, group, answerable, True, False, False, tuple([0.0] * len(FEATURE_NAMES)), False)
    return Sample(dataset, group, bool(answerable), True, bool(reading.supported),
                  bool(reading.from_table or reading.labelled),
                  tuple(float(x) for x in row), bool(correct and answerable), _legacy_accepts(reading, row))


def collect_docqa(encoder: DiskCachedEncoder) -> list[Sample]:
    from services.rag.answers.answering import QueryRequest, question_parts
    from services.rag.answers.extractive import read_answer

    items = load_items()
    corpus = DocumentCorpus(encoder)
    try:
        corpus.add_files(library(items))
        service = corpus.answer_service()
        engine = service.extractive
        samples = []
        for item in items:
            retrieved = asyncio.run(service.retrieve(corpus.TENANT, QueryRequest(item.question, 0, ())))
            if len(question_parts(item.question)) > 1:
                samples.append(Sample("docqa", item.file, item.answerable, False, False, False,
                                      tuple([0.0] * len(FEATURE_NAMES)), False))
                continue
            reading, row = engine.read(item.question, retrieved)
            correct = False
            if reading is not None:
                answer = read_answer(item.question, reading, 1.0, retrieved)
                correct = score(item, reply_from_domain(answer, 0.0)).correct
            samples.append(_sample("docqa", item.file, item.answerable, reading, row, correct))
        encoder.save()
        return samples
    finally:
        corpus.close()


def collect_squad(encoder: DiskCachedEncoder, size: int = SQUAD_SAMPLE) -> list[Sample]:
    from bench.squad import build, covers, sample
    from services.rag.answers.evidence import EvidenceRanker, pool_size
    from services.rag.answers.extractive import ExtractiveAnswerer
    from services.rag.retrieval import HybridRetriever, RetrievalConfig

    corpus, questions = build(encoder)
    quick = {q.id for q in sample(questions, quick=True)}
    pool_of = [q for q in questions if q.id not in quick]
    chosen = random.Random(SEED).sample(pool_of, min(size, len(pool_of)))
    retriever = HybridRetriever(corpus.index, encoder, RetrievalConfig())
    engine = ExtractiveAnswerer(encoder)
    evidence = EvidenceRanker(engine)
    k = retriever.config.default_top_k
    samples = []
    for q in chosen:
        retrieved = evidence.rerank(q.text, retriever.retrieve(corpus.TENANT, q.text, pool_size(k)))[:k]
        reading, row = engine.read(q.text, retrieved)
        correct = False
        if reading is not None:
            p = reading.hit.chunk.provenance
            right_article = corpus.by_document_id[reading.hit.chunk.document_id].key == q.article
            correct = right_article and covers(p.char_start + reading.source.start, p.char_start + reading.source.end,
                                               q.answers)
        ranked = engine.rank(q.text, retrieved)
        top = ranked[0] if ranked else None
        top_correct = bool(top and corpus.by_document_id[top.retrieved.chunk.document_id].key == q.article
                           and covers(top.page_start, top.page_end, q.answers))
        samples.append(replace(_sample("squad", q.article, q.answerable, reading, row, correct),
                               top_correct=top_correct))
    encoder.save()
    corpus.close()
    return samples


# -- fitting ----------------------------------------------------------------------------------------
def _voted(samples: Sequence[Sample]) -> list[Sample]:
    """The samples the model decides: read, supported by the reader's checks, not a table cell."""
    return [s for s in samples if s.read and s.supported and not s.from_table]


def fit(samples: Sequence[Sample]) -> tuple[list[float], float]:
    voted = _voted(samples)
    x = np.asarray([s.row for s in voted])
    y = np.asarray([s.correct_if_answered for s in voted], dtype=int)
    weights = np.asarray([DOCQA_WEIGHT if s.dataset == "docqa" else 1.0 for s in voted])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=REGULARISATION, max_iter=2000, random_state=SEED)
    model.fit((x - mean) / scale, y, sample_weight=weights)
    coef = model.coef_[0] / scale
    intercept = float(model.intercept_[0] - (model.coef_[0] * mean / scale).sum())
    return [float(c) for c in coef], intercept


def probability(model: tuple[list[float], float], sample: Sample) -> float:
    coef, intercept = model
    return float(1 / (1 + np.exp(-(np.dot(coef, sample.row) + intercept))))


def decide(sample: Sample, p: float, threshold: float) -> bool:
    """Answered? (multi-part questions are left out of the docqa figures' decisions: not read.)"""
    return sample.read and sample.supported and (sample.from_table or p >= threshold)


def figures(samples: Sequence[Sample], answered: Sequence[bool]) -> dict:
    answerable = [(s, a) for s, a in zip(samples, answered, strict=True) if s.answerable]
    unanswerable = [a for s, a in zip(samples, answered, strict=True) if not s.answerable]
    given = [s.correct_if_answered for s, a in answerable if a]
    return {
        "questions": len(samples),
        "answer_correct": round(float(np.mean([a and s.correct_if_answered for s, a in answerable])), 4),
        "answered_rate": round(float(np.mean([a for _, a in answerable])), 4),
        "correct_when_answered": round(float(np.mean(given)), 4) if given else None,
        "abstention_unanswerable": round(float(np.mean([not a for a in unanswerable])), 4) if unanswerable else None,
    }


def best_threshold(samples: Sequence[Sample], model) -> float:
    """The highest threshold at which the vote still keeps ``KEEP`` of the answerable questions the
    reader supports (each set's share counted equally). A threshold that maximised (answered right +
    refused) picked ~0.5 and refused most of both sets: that objective never pays for answering."""
    voted = [s for s in _voted(samples) if s.answerable]
    ps = {id(s): probability(model, s) for s in voted}
    sets = sorted({s.dataset for s in voted})
    kept = [t for t in GRID
            if np.mean([np.mean([ps[id(s)] >= t for s in voted if s.dataset == d]) for d in sets]) >= KEEP]
    return max(kept) if kept else GRID[0]


def per_set(samples: Sequence[Sample], answered: Sequence[bool]) -> dict:
    return {d: figures([s for s in samples if s.dataset == d],
                       [a for s, a in zip(samples, answered, strict=True) if s.dataset == d])
            for d in sorted({s.dataset for s in samples})}


def cross_validate(samples: Sequence[Sample]) -> dict:
    groups = sorted({(s.dataset, s.group) for s in samples})
    decided: dict[int, bool] = {}
    thresholds = []
    for group in groups:
        train = [s for s in samples if (s.dataset, s.group) != group]
        model = fit(train)
        threshold = best_threshold(train, model)
        thresholds.append(threshold)
        for i, s in enumerate(samples):
            if (s.dataset, s.group) == group:
                decided[i] = decide(s, probability(model, s), threshold)
    answered = [decided[i] for i in range(len(samples))]
    return {"folds": len(groups), "threshold_range": [min(thresholds), max(thresholds)],
            **per_set(samples, answered)}


def write_model(model: tuple[list[float], float], threshold: float, summary: dict) -> None:
    coef, intercept = model
    docqa, squad = summary["docqa"], summary["squad"]
    text = f'''"""Coefficients of the reader's acceptance model (generated by ``python -m bench.docqa_calibrate``).

Fitted on the docqa dev documents and SQuAD 2.0 together ({summary["questions"]} questions), rows of
``acceptance.FEATURE_NAMES``. Cross-validated by document (each docqa file and SQuAD article held
out, model and threshold refitted without it): docqa answer correct {docqa["answer_correct"]}, answered
{docqa["answered_rate"]} of answerable, refused {docqa["abstention_unanswerable"]} of unanswerable; SQuAD
cited sentence right for {squad["answer_correct"]} of answerable, answered {squad["answered_rate"]},
refused {squad["abstention_unanswerable"]}. Do not edit by hand: refit.
"""

VERSION = "docqa-squad-lr-{dt.date.today().isoformat()}"
FEATURES = {tuple(FEATURE_NAMES)!r}
MODEL = (
    {[round(c, 6) for c in coef]!r},
    {round(intercept, 6)!r},
)
"""(coefficients, intercept) of P(the reading is a right answer) over ``FEATURES``."""
THRESHOLD = {float(threshold)!r}
"""Probability under which a reading (not a table cell) is refused."""
'''
    MODEL_FILE.write_text(text)


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print the figures without writing the model")
    parser.add_argument("--squad", type=int, default=SQUAD_SAMPLE, help="SQuAD questions in the fit")
    parser.add_argument("--samples", type=pathlib.Path, help="reuse (or write) collected samples at this path")
    args = parser.parse_args(argv)
    if args.samples and args.samples.exists():
        samples = [Sample(**{**raw, "row": tuple(raw["row"])}) for raw in json.loads(args.samples.read_text())]
    else:
        samples = collect_docqa(DiskCachedEncoder("docqa")) + collect_squad(DiskCachedEncoder("squad"), args.squad)
        if args.samples:
            args.samples.write_text(json.dumps([s.__dict__ for s in samples]))
    model = fit(samples)
    threshold = best_threshold(samples, model)
    in_sample = [decide(s, probability(model, s), threshold) for s in samples]
    shipped = [s.read and s.shipped_accepts for s in samples]
    results = {
        "benchmark": "docqa-calibration",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "description": ("reader acceptance model (logistic, acceptance.FEATURE_NAMES) fitted on docqa dev + a "
                        f"seeded sample of {args.squad} SQuAD 2.0 dev questions (apart from the quality bench's "
                        "quick sample); leave-one-document-out CV over docqa files and SQuAD articles. SQuAD "
                        "'answer_correct' = the cited sentence covers a gold span. Multi-part docqa questions are "
                        "not read (they count as refused here)."),
        "docqa_weight": DOCQA_WEIGHT,
        "keep": KEEP,
        "regularisation": REGULARISATION,
        "threshold": threshold,
        "cross_validated_by_document": cross_validate(samples),
        "in_sample": per_set(samples, in_sample),
        "shipped_rule_before": per_set(samples, shipped),
        "coefficients": dict(zip(FEATURE_NAMES, [round(c, 4) for c in model[0]], strict=True)),
    }
    summary = {"questions": len(samples), **results["cross_validated_by_document"]}
    if not args.dry_run:
        write_model(model, threshold, summary)
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"docqa-calibration-{dt.date.today().isoformat()}.json"
        path.write_text(json.dumps(results, indent=2) + "\n")
        print(f"[docqa-calibrate] wrote {path} and {MODEL_FILE}")
    print(json.dumps({k: v for k, v in results.items() if k not in ("description",)}, indent=2))
    return results


if __name__ == "__main__":
    main()
