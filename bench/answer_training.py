"""Trains the answer ranker and measures it out of fold by document (``make train-answers``).

1. Collects samples (``bench.answer_data``): the docqa and docqa2 questions over their own libraries
   (every file of the set uploaded as one tenant's library, no document filter), SQuAD 2.0's dev questions
   over 28 articles, and each of these again over the first ``SMALL_POOL`` chunks of its pool (a short
   document or a small library); each sample is the question's evidence pool from the production
   retrieval, its units (``units``) with their features (``unit_features``) and labels. The same questions
   over their own document alone, and questions generated from the structure of the documents
   (``answer_synthetic``), are collected too: the first are scored as a slice, and neither trains the
   shipped model (``--with`` adds them; they gave no out-of-fold gain).
2. Cross-validates by document: docqa + docqa2 questions are split into ``--folds`` groups of whole
   documents; each fold's model is trained on the other documents' samples and SQuAD's, and its abstention
   threshold is chosen by an inner grouped cross-validation of that training set (never on the fold it is
   scored on). The held-out questions are then answered by the production engine with the fold's model
   (``ExtractiveAnswerer(ranker=...)``, whole documents at hand for summaries and table computations) and
   scored by the sets' matching rule: these out-of-fold figures are the estimate for documents nobody has seen.
3. Trains the shipped model on everything, its threshold by the same inner cross-validation, and writes
   ``services/rag/answers/models/unit_ranker.{txt,json}`` (the manifest holds the features, threshold,
   seed, library versions, the data manifest and the out-of-fold figures) and
   ``bench/results/answer-ranker-<date>.{json,md}`` and ``-risk-coverage.png`` (``--no-write``: the
   report only, the committed model untouched; ``make bench-docqa``).

Deterministic for a given data set and library versions (LightGBM single-threaded, fixed seeds).

The steps live in ``answer_samples`` (collection, features), ``answer_fit`` (training, folds, threshold) and
``answer_eval`` (the production engine's answers, scores and reports); this module runs them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import pathlib
import time
from collections.abc import Sequence

from bench.answer_eval import answer_with, cross_validate, markdown_report, plot_risk_coverage, report, risk_coverage
from bench.answer_fit import PARAMS, ROUNDS, SEED, WEIGHTS, choose_threshold, train
from bench.answer_samples import (
    ONE_DOCUMENT,
    REAL,
    SETS,
    SMALL_SQUAD_EVERY,
    collect_docqa,
    collect_squad,
    featurise,
    similarity_of,
    small_pools,
)
from bench.shared import SHARED
from services.rag.answers.ranker import MANIFEST_FILE, MODEL_FILE, AnswerRanker
from services.rag.answers.unit_features import FEATURE_NAMES

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--no-squad", action="store_true")
    parser.add_argument("--with", dest="with_", action="append", default=[], choices=("synthetic", "one-document"),
                        help="also train on the questions generated from structure / the one-document pools")
    parser.add_argument("--no-write", action="store_true", help="report only; keep the committed model")
    args = parser.parse_args(argv)
    from bench.corpus import DiskCachedEncoder
    from services.rag.answers.vectors import CachedEncoder

    started = time.perf_counter()
    (docqa, docqa_synthetic), (docqa2, docqa2_synthetic) = collect_docqa("docqa"), collect_docqa("docqa2")
    real = [s for s in docqa + docqa2 if s.source in REAL]
    one_document = [s for s in docqa + docqa2 if s.source in ONE_DOCUMENT]
    squad = [] if args.no_squad else collect_squad()
    small = small_pools(real)
    other = squad + small + small_pools(squad[::SMALL_SQUAD_EVERY]) + (
        docqa_synthetic + docqa2_synthetic if "synthetic" in args.with_ else []) + (
        one_document if "one-document" in args.with_ else [])
    # Scored out of fold as their own slices (a fold never trains on its held-out documents' samples of any kind).
    scored_only = ([] if "one-document" in args.with_ else one_document) + small
    encoder = CachedEncoder(DiskCachedEncoder("answer-units"))
    once = {id(s) for s in small}
    featurise(real + [s for s in other if id(s) not in once] + scored_only, similarity_of(encoder))
    print(f"[train-answers] {len(real)} real questions, {len(other)} others; features in "
          f"{time.perf_counter() - started:.0f} s", flush=True)
    cv = cross_validate(real, other, encoder, args.folds, scored_only)
    oof = report(cv["outcomes"], "out-of-fold")
    threshold = choose_threshold(real + other)
    model = train(real + other)
    shipped = AnswerRanker.from_model(model, threshold, "shipped")
    insample = report({s.id + "@" + s.source: (s, o, 0)
                       for s, (o, _) in zip(real, answer_with(shipped, real, encoder), strict=True)}, "in-sample")
    curve = risk_coverage(cv["curve"])
    import lightgbm

    manifest = {
        "version": f"unit-ranker-{dt.date.today().isoformat()}",
        "features": list(FEATURE_NAMES), "threshold": threshold, "seed": SEED, "params": PARAMS, "rounds": ROUNDS,
        "weights": WEIGHTS, "lightgbm": lightgbm.__version__,
        "data": {name: {"questions": str(path.relative_to(SHARED)), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                        "count": sum(1 for s in real if s.source == name)} for name, (path, _) in SETS.items()}
                | {"squad": {"questions": len(other)}},
        "out_of_fold": oof["overall"], "fold_thresholds": cv["thresholds"],
        "in_sample": insample["overall"],
    }
    if not args.no_write:
        MODEL_FILE.parent.mkdir(parents=True, exist_ok=True)
        model.save_model(str(MODEL_FILE))
        MANIFEST_FILE.write_text(json.dumps(manifest, indent=1) + "\n")
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = RESULTS / f"answer-ranker-{dt.date.today().isoformat()}"
    stem.with_suffix(".json").write_text(json.dumps({"manifest": manifest, "out_of_fold": oof, "in_sample": insample,
                                                     "risk_coverage": curve}, indent=1, default=str) + "\n")
    stem.with_suffix(".md").write_text(markdown_report(oof, insample, manifest))
    plot_risk_coverage(curve, cv["thresholds"], stem.parent / f"{stem.name}-risk-coverage.png")
    print(json.dumps({"out_of_fold": oof["overall"], "per_set": oof["per_set"], "in_sample": insample["overall"],
                      "threshold": threshold}, indent=1))
    return manifest


if __name__ == "__main__":
    main()
