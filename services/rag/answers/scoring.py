"""The learned answer scorer: which sentence holds the answer, and is there an answer at all.

Two small logistic regressions over ``features.FEATURE_NAMES`` (coefficients in
``answer_model.py``, fitted by ``python -m bench.calibrate_abstention``):

- the sentence model gives each candidate the probability that it holds the answer; candidates
  are ranked by it;
- the answerability model reads the best candidate's features plus summaries of the whole
  candidate set (its lead over the runner-up, the best plain similarity ...) and gives the
  probability that the best sentence really answers the question; below the threshold the
  engine abstains.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from services.rag.answers import answer_model
from services.rag.answers.features import FEATURE_NAMES

SUMMARY_NAMES: tuple[str, ...] = ("best_decision", "decision_margin", "max_plain_score", "max_cosine",
                                  "max_idf_coverage", "max_idf_coverage_window")
ANSWERABILITY_NAMES: tuple[str, ...] = SUMMARY_NAMES + tuple(f"best_{n}" for n in FEATURE_NAMES)

_COL = {name: i for i, name in enumerate(FEATURE_NAMES)}


def plain_score(matrix: np.ndarray) -> np.ndarray:
    """The unlearned similarity: half MiniLM cosine, half question-term coverage."""
    return 0.5 * matrix[:, _COL["cosine"]] + 0.5 * matrix[:, _COL["coverage"]]


@dataclass(frozen=True)
class LinearModel:
    coef: tuple[float, ...]
    intercept: float

    def decision(self, matrix: np.ndarray) -> np.ndarray:
        return matrix @ np.asarray(self.coef) + self.intercept


def sigmoid(x: np.ndarray | float) -> np.ndarray | float:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -30, 30)))


def answerability_features(matrix: np.ndarray, decisions: np.ndarray) -> np.ndarray:
    """One row of ``ANSWERABILITY_NAMES`` for a question's candidate set (non-empty)."""
    order = np.argsort(-decisions)
    best = int(order[0])
    margin = decisions[best] - decisions[order[1]] if len(order) > 1 else 5.0
    summary = [decisions[best], margin, float(plain_score(matrix).max()), matrix[:, _COL["cosine"]].max(),
               matrix[:, _COL["idf_coverage"]].max(), matrix[:, _COL["idf_coverage_window"]].max()]
    return np.concatenate([np.asarray(summary, dtype=float), matrix[best]])


class AnswerScorer:
    def __init__(self, sentence: LinearModel, answerability: LinearModel) -> None:
        if len(sentence.coef) != len(FEATURE_NAMES) or len(answerability.coef) != len(ANSWERABILITY_NAMES):
            raise ValueError("answer model does not match the feature set; refit with bench.calibrate_abstention")
        self.sentence = sentence
        self.answerability = answerability

    @classmethod
    def shipped(cls) -> AnswerScorer:
        (sentence, sentence_b), (answerable, answerable_b) = answer_model.SENTENCE, answer_model.ANSWERABILITY
        return cls(LinearModel(tuple(sentence), sentence_b), LinearModel(tuple(answerable), answerable_b))

    def sentence_decisions(self, matrix: np.ndarray) -> np.ndarray:
        return self.sentence.decision(matrix)

    def answerable(self, matrix: np.ndarray, decisions: np.ndarray) -> float:
        """Probability that the best candidate answers the question (0 with no candidates)."""
        if len(matrix) == 0:
            return 0.0
        row = answerability_features(matrix, decisions)
        return float(sigmoid(self.answerability.decision(row[None, :])[0]))
