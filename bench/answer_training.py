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
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import hashlib
import json
import pathlib
import pickle
import time
from collections.abc import Sequence

import numpy as np

from bench.answer_data import CACHE, QuestionSample, label_units, parse_cached, unit_holds
from bench.docqa_score import Item, breakdown
from bench.shared import SHARED
from services.rag.answers.ranker import MANIFEST_FILE, MODEL_FILE, AnswerRanker
from services.rag.answers.unit_features import FEATURE_NAMES, feature_matrix
from services.rag.answers.units import units

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
SETS = {"docqa": (SHARED / "data" / "docqa" / "dev.json", SHARED / "fixtures" / "docs"),
        "docqa2": (SHARED / "data" / "docqa2" / "dev.json", SHARED / "data" / "docqa2" / "docs")}
POOL = 20
"""Chunks of the fused pool the engine reads units from (``answering.pool_size``)."""
SEED = 20261207
PARAMS = {"objective": "binary", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20,
          "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1, "lambda_l2": 1.0,
          "num_threads": 1, "deterministic": True, "force_row_wise": True, "seed": SEED, "verbose": -1}
ROUNDS = 300
WEIGHTS = {"docqa": 3.0, "docqa2": 3.0, "squad": 1.0, "docqa:small-pool": 2.0, "docqa2:small-pool": 2.0,
           "squad:small-pool": 1.0, "docqa:one-document": 2.0, "docqa2:one-document": 2.0,
           "synthetic": 0.5}
"""Per-unit weight by source: questions over real documents in users' words count most."""
REAL = frozenset({"docqa", "docqa2"})
"""Questions in users' words over each set's whole library (no document filter): trained on, cross-validated by
document and scored (the headline figures)."""
ONE_DOCUMENT = frozenset({"docqa:one-document", "docqa2:one-document"})
"""The same questions over their own document alone (a one-document library, or a question filtered to its
document): scored out of fold as their own slice. Training on them (``--with one-document``) and on the questions
generated from document structure (``--with synthetic``) gave no out-of-fold gain (top-1 0.589 and 0.593 against
0.602 without), so neither trains the shipped model."""


# -- collection -----------------------------------------------------------------------------------------
def _pools_key(name: str, questions: Sequence[str], files: Sequence[pathlib.Path]) -> pathlib.Path:
    digest = hashlib.sha256(json.dumps([name, list(questions), [p.name for p in files], POOL]).encode()).hexdigest()
    return CACHE / f"pools-{name}-{digest[:16]}.pkl"


DOCUMENTS: dict[str, list] = {}
"""Every chunk of every document of the libraries, by document id (summaries and table computations read them)."""


def document_chunks(tenant: str, document_id: str) -> list:
    return DOCUMENTS.get(document_id, [])


def collect_docqa(name: str) -> tuple[list[QuestionSample], list[QuestionSample]]:
    """The set's questions with their evidence pools over the set's own library, the questions generated from the
    structure of its documents (``answer_synthetic``, grouped with their document) with theirs, and the library's
    chunks into ``DOCUMENTS`` (all cached)."""
    from bench.docqa_bench import library, load_items

    questions_path, docs = SETS[name]
    items = load_items(questions_path)
    files = library(items, docs)
    key = _pools_key(name, [i.question for i in items], files)
    chunks_key = key.with_name(key.name.replace("pools-", "chunks-"))
    synthetic_key = key.with_name(key.name.replace("pools-", "synthetic-"))
    if key.exists() and chunks_key.exists() and synthetic_key.exists():
        DOCUMENTS.update(pickle.loads(chunks_key.read_bytes()))
        return pickle.loads(key.read_bytes()), pickle.loads(synthetic_key.read_bytes())
    import bench.docqa_corpus as docqa_corpus
    from bench.answer_synthetic import generate
    from bench.corpus import DiskCachedEncoder
    from services.rag.answers.settings import AnswerSettings
    from services.rag.retrieval import HybridRetriever, RetrievedChunk

    original = docqa_corpus.parse
    docqa_corpus.parse = lambda data, *args: parse_cached(original, data, *args)
    encoder = DiskCachedEncoder(name)
    corpus = docqa_corpus.DocumentCorpus(encoder)
    try:
        corpus.add_files(files)
        library_chunks = {doc_id: corpus.index.document_chunks(corpus.TENANT, doc_id) for doc_id in corpus.by_document_id}
        DOCUMENTS.update(library_chunks)
        retriever = HybridRetriever(corpus.index, encoder, AnswerSettings().retrieval_config())

        def pooled(sample: QuestionSample) -> QuestionSample:
            sample.pool = asyncio.run(retriever.search(corpus.TENANT, sample.question, POOL, None))
            return sample

        samples = (pickle.loads(key.read_bytes()) if key.exists() else
                   [pooled(QuestionSample(item.id, name, f"{name}/{item.file}", item.question, item.answers, item.kind,
                                          item.tags, item=item)) for item in items])
        samples = [x for x in samples if x.source == name]
        ids = {corpus.documents[f.name].document_id: f.name for f in files if f.name in corpus.documents}
        by_file = {filename: doc_id for doc_id, filename in ids.items()}
        for item in items:
            if item.file not in by_file:
                continue
            one = QuestionSample(item.id, f"{name}:one-document", f"{name}/{item.file}", item.question, item.answers,
                                 item.kind, item.tags, item=item)
            one.pool = asyncio.run(retriever.search(corpus.TENANT, item.question, POOL, [by_file[item.file]]))
            samples.append(one)
        # Only the documents the set asks about: their questions' folds decide which generated questions train.
        asked = {i.file for i in items}
        synthetic = []
        for doc_id in corpus.by_document_id:
            filename = library_chunks[doc_id][0].provenance.filename if library_chunks.get(doc_id) else ""
            if filename in asked:
                hits = [RetrievedChunk(c, 1.0) for c in library_chunks[doc_id]]
                synthetic += [pooled(x) for x in generate(filename, hits, f"{name}/{filename}")]
    finally:
        docqa_corpus.parse = original
        corpus.close()
    CACHE.mkdir(parents=True, exist_ok=True)
    key.write_bytes(pickle.dumps(samples))
    chunks_key.write_bytes(pickle.dumps(library_chunks))
    synthetic_key.write_bytes(pickle.dumps(synthetic))
    return samples, synthetic


def collect_squad() -> list[QuestionSample]:
    from bench import squad
    from bench.corpus import DiskCachedEncoder
    from services.rag.answers.settings import AnswerSettings
    from services.rag.retrieval import HybridRetriever

    articles, questions = squad.load()
    key = _pools_key("squad", [q.text for q in questions], [])
    if key.exists():
        return pickle.loads(key.read_bytes())
    encoder = DiskCachedEncoder("squad")
    corpus = squad.BenchCorpus(encoder)
    try:
        corpus.add(articles.items())
        retriever = HybridRetriever(corpus.index, encoder, AnswerSettings().retrieval_config())
        samples = []
        for q in questions:
            pool = asyncio.run(retriever.search(corpus.TENANT, q.text, POOL, None))
            golds = tuple(dict.fromkeys(text for text, _ in q.answers))
            item = Item(q.id, f"{q.article[:80]}.txt", q.text, golds, "squad", ())
            samples.append(QuestionSample(q.id, "squad", f"squad/{q.article}", q.text, golds, "squad", (), pool=pool,
                                          item=item))
    finally:
        corpus.close()
    key.write_bytes(pickle.dumps(samples))
    return samples


FEATURE_CODE = ("unit_features.py", "units.py", "tables.py", "sentences.py", "typed_spans.py", "answer_types.py",
                "lexical.py")


SMALL_POOL = 2
"""Chunks of the small pools trained on beside the full ones: a short document or a small library gives a pool of
a few units, whose features (pool-relative similarity, local idf) the 20-chunk pools never show."""
SMALL_SQUAD_EVERY = 4


def small_pools(samples: Sequence[QuestionSample]) -> list[QuestionSample]:
    """Each sample again over the first ``SMALL_POOL`` chunks of its pool (same question, group and gold;
    features and labels recomputed). Out of fold they lifted the utility on such pools from 0.344 to 0.391 per
    question with the full pools' top-1 unchanged (0.589 / 0.593)."""
    return [dataclasses.replace(s, source=f"{s.source}:small-pool", pool=list(s.pool[:SMALL_POOL]), features=None,
                                labels=None) for s in samples]


def featurise(samples: Sequence[QuestionSample], similarity) -> None:
    """Units, features and labels of every sample (in place); cached by the samples and the feature code."""
    code = b"".join((ROOT / "services" / "rag" / "answers" / name).read_bytes() for name in FEATURE_CODE)
    digest = hashlib.sha256(code + json.dumps([[s.id, s.source, s.question] for s in samples]).encode()).hexdigest()
    key = CACHE / f"features-{digest[:16]}.pkl"
    if key.exists():
        for sample, (features, labels) in zip(samples, pickle.loads(key.read_bytes()), strict=True):
            sample.features, sample.labels = features, labels
        return
    for sample in samples:
        found = units(sample.pool)
        sample.features = feature_matrix(sample.question, found, similarity)
        sample.labels = label_units(found, lambda u, s=sample: bool(s.answers) and unit_holds(u, s.item))
    key.write_bytes(pickle.dumps([(s.features, s.labels) for s in samples]))


def similarity_of(encoder):
    def similarity(question: str, texts: Sequence[str]) -> np.ndarray:
        vectors = encoder.encode([question, *texts])
        return np.asarray(vectors[1:] @ vectors[0], dtype=float)
    return similarity


# -- training --------------------------------------------------------------------------------------------
def _matrix(samples: Sequence[QuestionSample]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xs = [s.features for s in samples if s.features is not None and len(s.features)]
    ys = [s.labels for s in samples if s.features is not None and len(s.features)]
    ws = [np.full(len(s.labels), WEIGHTS[s.source]) for s in samples if s.features is not None and len(s.features)]
    if not xs:
        return np.zeros((0, len(FEATURE_NAMES))), np.zeros(0), np.zeros(0)
    return np.vstack(xs), np.concatenate(ys), np.concatenate(ws)


def train(samples: Sequence[QuestionSample], rounds: int = ROUNDS):
    import lightgbm

    x, y, w = _matrix(samples)
    data = lightgbm.Dataset(x, y, weight=w, feature_name=list(FEATURE_NAMES), free_raw_data=False)
    return lightgbm.train(PARAMS, data, num_boost_round=rounds)


def folds_of(groups: Sequence[str], k: int) -> list[int]:
    """A fold per sample, whole groups together, balanced by question count, deterministic."""
    sizes: dict[str, int] = {}
    for g in groups:
        sizes[g] = sizes.get(g, 0) + 1
    order = sorted(sizes, key=lambda g: (-sizes[g], hashlib.sha256(f"{SEED}{g}".encode()).hexdigest()))
    load = [0] * k
    assigned: dict[str, int] = {}
    for g in order:
        fold = min(range(k), key=lambda f: (load[f], f))
        assigned[g] = fold
        load[fold] += sizes[g]
    return [assigned[g] for g in groups]


def best_probabilities(model, samples: Sequence[QuestionSample]) -> list[tuple[float, bool]]:
    """(probability of the top unit, whether the top unit holds the answer) per sample."""
    ranker = AnswerRanker.from_model(model, 0.0)
    out = []
    for s in samples:
        if s.features is None or not len(s.features):
            out.append((0.0, False))
            continue
        p = ranker.probabilities(s.features)
        top = int(np.argmax(p))
        out.append((float(p[top]), bool(s.labels[top] > 0)))
    return out


def utility(scored: Sequence[tuple[float, bool, bool]], threshold: float) -> float:
    """Answered correctly + refused when unanswerable - wrong answers (a confident wrong answer costs more
    than a refusal) over (probability, top unit correct, answerable) triples."""
    total = 0.0
    for p, correct, answerable in scored:
        if p >= threshold:
            total += 1.0 if (answerable and correct) else -1.0
        elif not answerable:
            total += 1.0
    return total


GRID = tuple(round(x, 3) for x in np.linspace(0.02, 0.9, 89))


def choose_threshold(samples: Sequence[QuestionSample], inner: int = 4) -> float:
    """The threshold maximising ``utility`` on an inner grouped cross-validation of these samples' real
    questions (docqa, docqa2); SQuAD and synthetic questions train every inner model."""
    real = [s for s in samples if s.source in REAL]
    other = [s for s in samples if s.source not in REAL]
    folds = folds_of([s.group for s in real], inner)
    scored: list[tuple[float, bool, bool]] = []
    for f in range(inner):
        held = [s for s, g in zip(real, folds, strict=True) if g == f]
        model = train([s for s, g in zip(real, folds, strict=True) if g != f] + [s for s in other
                       if s.group not in {h.group for h in held}])
        scored += [(p, c, s.answerable) for (p, c), s in zip(best_probabilities(model, held), held, strict=True)]
    return max(GRID, key=lambda t: (utility(scored, t), -t))


# -- evaluation through the production engine -----------------------------------------------------------
def answer_with(ranker: AnswerRanker, samples: Sequence[QuestionSample], encoder) -> list[tuple[object, float]]:
    """(scored outcome, probability of the best unit: 1 for a computed answer, 0 with no unit) per sample."""
    from bench.docqa_bench import reply_from_domain
    from bench.docqa_score import score
    from services.rag.answers.extractive import ExtractiveAnswerer

    engine = ExtractiveAnswerer(encoder, ranker=ranker, document_chunks=document_chunks)
    outcomes = []
    for s in samples:
        started = time.perf_counter()
        answer = engine.answer(s.question, s.pool)
        seconds = time.perf_counter() - started
        best = engine.rank(s.question, s.pool)
        p = 1.0 if answer.answer_type.startswith(("aggregate", "summary")) else engine.answerability(best)
        outcomes.append((score(s.item, reply_from_domain(answer, seconds)), p))
    return outcomes


def cross_validate(real: Sequence[QuestionSample], other: Sequence[QuestionSample], encoder, k: int,
                   scored_only: Sequence[QuestionSample] = ()) -> dict:
    """Out-of-fold outcomes at each fold's own threshold, and at threshold 0 (for the risk-coverage curve);
    ``scored_only`` samples are answered by the fold their document falls in, never trained on."""
    folds = folds_of([s.group for s in real], k)
    fold_of = dict(zip([s.group for s in real], folds, strict=True))
    outcomes: dict[str, object] = {}
    curve: list[tuple[float, bool, bool]] = []
    thresholds = []
    for f in range(k):
        held = [s for s, g in zip(real, folds, strict=True) if g == f]
        held_groups = {s.group for s in held}
        held = held + [s for s in scored_only if fold_of.get(s.group) == f]
        training = [s for s, g in zip(real, folds, strict=True) if g != f] + [
            s for s in other if s.group not in held_groups]
        threshold = choose_threshold(training)
        thresholds.append(threshold)
        model = train(training)
        ranker = AnswerRanker.from_model(model, threshold, f"fold-{f}")
        for s, (o, _) in zip(held, answer_with(ranker, held, encoder), strict=True):
            outcomes[s.id + "@" + s.source] = (s, o, f)
        always = AnswerRanker.from_model(model, 0.0, f"fold-{f}")
        headline = [s for s in held if s.source in HEADLINE]
        curve += [(p, bool(o.correct), s.answerable)
                  for s, (o, p) in zip(headline, answer_with(always, headline, encoder), strict=True)]
        print(f"[train-answers] fold {f}: {len(held)} questions, threshold {threshold}", flush=True)
    return {"folds": folds, "thresholds": thresholds, "outcomes": outcomes, "curve": curve}


def risk_coverage(curve: Sequence[tuple[float, bool, bool]]) -> list[dict]:
    """Per threshold of the grid: share of questions answered (coverage) and share of those answers wrong (risk)."""
    points = []
    for t in (0.0, *GRID):
        answered = [(c, a) for p, c, a in curve if p >= t]
        wrong = sum(1 for c, _ in answered if not c)
        refused_unanswerable = sum(1 for p, _, a in curve if p < t and not a)
        points.append({"threshold": t, "coverage": round(len(answered) / max(len(curve), 1), 4),
                       "risk": round(wrong / max(len(answered), 1), 4),
                       "answerable_answered": round(sum(1 for c, a in answered if a) / max(sum(1 for *_, a in curve if a), 1), 4),
                       "unanswerable_refused": round(refused_unanswerable / max(sum(1 for *_, a in curve if not a), 1), 4)})
    return points


def plot_risk_coverage(points: Sequence[dict], thresholds: Sequence[float], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 4.5))
    axis.plot([p["coverage"] for p in points], [p["risk"] for p in points], marker=".", label="out of fold")
    for t in sorted(set(thresholds)):
        near = min(points, key=lambda p: abs(p["threshold"] - t))
        axis.annotate(f"t={t}", (near["coverage"], near["risk"]), fontsize=7)
    axis.set_xlabel("coverage (share of questions answered)")
    axis.set_ylabel("risk (share of answers that are wrong)")
    axis.set_title("Answer ranker, docqa + docqa2, cross-validated by document")
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def issue_goals(overall: dict) -> dict:
    """The goals of issue #36, over out-of-fold outcomes."""
    return {"answer_correct>=0.75": (overall["answer_correct"] or 0) >= 0.75,
            "precision_when_answered>=0.90": (overall.get("precision") or 0) >= 0.90,
            "unanswerable_refused>=0.80": (overall["abstention_unanswerable"] or 0) >= 0.80,
            "answerable_answered>=0.80": (overall["answered_rate"] or 0) >= 0.80}


def precision(rows: Sequence) -> float | None:
    answered = [o for o in rows if o.answered]
    return round(sum(1 for o in answered if o.correct) / len(answered), 4) if answered else None


HEADLINE = ("docqa", "docqa2")
"""The sources the headline figures are over: questions asked of a whole library with no document filter."""


def report(outcomes: dict, name: str) -> dict:
    """Overall, per format, kind and tag over the headline sources; per set over every source."""
    from bench.docqa_score import outcome_rows, summarise

    headline = [(s, o) for s, o, _ in outcomes.values() if s.source in HEADLINE]
    rows = [o for _, o in headline]
    by_format: dict[str, list] = {}
    for s, o in headline:
        by_format.setdefault(s.item.file.rsplit(".", 1)[-1].lower(), []).append(o)
    result = breakdown(rows)
    result["overall"]["precision"] = precision(rows)
    result["goals"] = issue_goals(result["overall"])
    result["per_format"] = {k: summarise(v) | {"precision": precision(v)} for k, v in sorted(by_format.items())}
    result["per_set"] = {src: summarise(v) | {"precision": precision(v)} for src in
                         sorted({s.source for s, _, _ in outcomes.values()})
                         for v in [[o for s, o, _ in outcomes.values() if s.source == src]]}
    result["items"] = outcome_rows(rows)
    result["name"] = name
    return result


def markdown_report(oof: dict, insample: dict, manifest: dict) -> str:
    def row(name: str, o: dict, i: dict | None = None) -> str:
        fmt = lambda v: "" if v is None else f"{v:.3f}"  # noqa: E731
        line = (f"| {name} | {o['items']} | {fmt(o['answer_correct'])} | {fmt(o.get('precision'))} | "
                f"{fmt(o['answered_rate'])} | {fmt(o['abstention_unanswerable'])} | {fmt(o['citation_hit'])} |")
        return line + (f" {fmt(i['answer_correct'])} |" if i else " |")

    lines = [f"# Answer ranker {manifest['version']}: out of fold by document (docqa + docqa2)", "",
             f"{len(manifest['fold_thresholds'])} folds of whole documents; each fold's model and threshold fitted on the "
             "other documents' questions (+ SQuAD); shipped threshold "
             f"{manifest['threshold']}. In-sample (shipped model on its own training questions) shown for comparison "
             "only.", "",
             "| slice | n | correct | precision (answered) | answerable answered | unanswerable refused | citation hit | "
             "in-sample correct |", "| --- | --- | --- | --- | --- | --- | --- | --- |",
             row("**all**", oof["overall"], insample["overall"])]
    lines += [row(f"set={k}", v, insample["per_set"].get(k)) for k, v in oof["per_set"].items()]
    lines += [row(f"format={k}", v, insample["per_format"].get(k)) for k, v in oof["per_format"].items()]
    lines += [row(f"kind={k}", v, insample["per_kind"].get(k)) for k, v in oof["per_kind"].items()]
    lines += [row(f"tag={k}", v, insample["per_tag"].get(k)) for k, v in oof["per_tag"].items()]
    lines += ["", "Goals (issue #36, out of fold): " + ", ".join(
        f"{k} {'met' if v else 'NOT met'}" for k, v in oof["goals"].items()), ""]
    return "\n".join(lines) + "\n"


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
