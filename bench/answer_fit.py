"""Fitting the answer ranker (``bench.answer_training``'s training): LightGBM on weighted units, folds of whole
documents, and the abstention threshold chosen by an inner grouped cross-validation.

Deterministic for a given data set and library versions (LightGBM single-threaded, fixed seeds).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from bench.answer_data import QuestionSample
from bench.answer_samples import REAL
from services.rag.answers.ranker import AnswerRanker
from services.rag.answers.unit_features import FEATURE_NAMES

SEED = 20261207
PARAMS = {"objective": "binary", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20,
          "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1, "lambda_l2": 1.0,
          "num_threads": 1, "deterministic": True, "force_row_wise": True, "seed": SEED, "verbose": -1}
ROUNDS = 300
WEIGHTS = {"docqa": 3.0, "docqa2": 3.0, "squad": 1.0, "docqa:small-pool": 2.0, "docqa2:small-pool": 2.0,
           "squad:small-pool": 1.0, "docqa:one-document": 2.0, "docqa2:one-document": 2.0,
           "synthetic": 0.5}
"""Per-unit weight by source: questions over real documents in users' words count most."""


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
