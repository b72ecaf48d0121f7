"""The learned answer ranker: P(this unit holds the answer) from ``unit_features``, and the abstention threshold.

A gradient-boosted tree model (LightGBM) trained by ``bench.answer_training`` (``make train-answers``) on
questions over real documents (docqa, docqa2), SQuAD 2.0 and questions generated from document structure,
cross-validated by document; its file and manifest (feature names, threshold chosen out of fold, the
training data's manifest, seed, out-of-fold figures) are committed beside this module. The same class
serves a fold's model inside the cross-validation, so out-of-fold figures come from this code path.
"""

from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from services.rag.answers.unit_features import FEATURE_NAMES

MODEL_DIR = pathlib.Path(__file__).with_name("models")
MODEL_FILE = MODEL_DIR / "unit_ranker.txt"
MANIFEST_FILE = MODEL_DIR / "unit_ranker.json"


class RankerMismatchError(RuntimeError):
    """The committed model was trained on other features: retrain with ``make train-answers``."""


@dataclass(frozen=True)
class AnswerRanker:
    booster: Any
    """A ``lightgbm.Booster`` (typed loosely: LightGBM is imported only when a model is loaded)."""
    threshold: float
    """Probability of the best unit under which the engine abstains (chosen out of fold)."""
    version: str = ""

    @classmethod
    def from_files(cls, model: pathlib.Path = MODEL_FILE, manifest: pathlib.Path = MANIFEST_FILE) -> AnswerRanker:
        import lightgbm

        meta = json.loads(manifest.read_text())
        if tuple(meta["features"]) != FEATURE_NAMES:
            raise RankerMismatchError("the answer ranker's features differ from unit_features.FEATURE_NAMES")
        return cls(lightgbm.Booster(model_file=str(model)), float(meta["threshold"]), str(meta.get("version", "")))

    @classmethod
    def from_model(cls, booster, threshold: float, version: str = "fold") -> AnswerRanker:
        return cls(booster, threshold, version)

    def probabilities(self, matrix: np.ndarray) -> np.ndarray:
        if len(matrix) == 0:
            return np.zeros(0)
        return np.asarray(self.booster.predict(matrix, num_threads=1), dtype=float)


@lru_cache(maxsize=1)
def shipped() -> AnswerRanker:
    return AnswerRanker.from_files()
