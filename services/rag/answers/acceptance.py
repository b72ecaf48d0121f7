"""Whether a reader's answer is given: a small learned vote over the reading and its evidence.

The reader's own checks come first (the asked-for type found, the question's key terms held:
``Reading.supported``); a table cell that passes them is answered. Every other reading is put to
a logistic model (coefficients in ``reader_model.py``, fitted by ``python -m bench.docqa_calibrate``
on the docqa dev documents and SQuAD 2.0 together, cross-validated by document) that reads the
reading's shape (typed span, soft who/where, list, free text), its key-term coverage, where its
sentence stands in the sentence model's ranking, and the SQuAD-fitted answerability of the
ranked evidence. Under the fitted threshold the engine refuses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from services.rag.answers import reader_model
from services.rag.answers.answer_types import NAMED, TYPED, AnswerType
from services.rag.answers.reader import Reading
from services.rag.answers.scoring import LinearModel, sigmoid

FEATURE_NAMES: tuple[str, ...] = (
    "answerability_logit",
    "best_decision",
    "decision_margin",
    "source_reciprocal_rank",
    "source_decision_gap",
    "coverage",
    "own_coverage",
    "category_unseen",
    "unseen_terms",
    "log_key_terms",
    "typed",
    "soft",
    "named",
    "free_text",
    "definition",
    "list",
    "whole_sentence",
    "typed_and_covered",
)


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def features(reading: Reading, ranked: Sequence, answerability: float) -> np.ndarray:
    """One ``FEATURE_NAMES`` row for a reading over the ranked candidate sentences (``ScoredSentence``)."""
    decisions = [s.rank_score for s in ranked]
    best = decisions[0] if decisions else 0.0
    margin = decisions[0] - decisions[1] if len(decisions) > 1 else 5.0
    position = next((i for i, s in enumerate(ranked)
                     if s.retrieved.chunk.chunk_id == reading.hit.chunk.chunk_id
                     and s.span.start <= reading.source.start < max(s.span.end, s.span.start + 1)), None)
    typed = reading.kind in TYPED and reading.typed and not reading.soft
    free = reading.kind not in TYPED and reading.kind not in NAMED and reading.kind not in (
        AnswerType.DEFINITION, AnswerType.LIST)
    return np.asarray([
        _logit(answerability),
        best,
        min(margin, 5.0),
        0.0 if position is None else 1.0 / (1 + position),
        0.0 if position is None else decisions[position] - best,
        reading.coverage,
        reading.own_coverage,
        float(reading.category_unseen),
        float(reading.unseen_terms),
        math.log1p(reading.key_term_count),
        float(typed),
        float(reading.soft),
        float(reading.kind in NAMED),
        float(free),
        float(reading.kind is AnswerType.DEFINITION),
        float(bool(reading.items)),
        float(reading.short_start < 0),
        float(typed and reading.coverage >= 0.75 and reading.unseen_terms == 0),
    ], dtype=float)


class AcceptanceModel:
    def __init__(self, model: LinearModel) -> None:
        if len(model.coef) != len(FEATURE_NAMES):
            raise ValueError("reader model does not match the feature set; refit with bench.docqa_calibrate")
        self.model = model

    @classmethod
    def shipped(cls) -> AcceptanceModel:
        coef, intercept = reader_model.MODEL
        return cls(LinearModel(tuple(coef), intercept))

    def probability(self, row: np.ndarray) -> float:
        """Probability that the reading is a right answer."""
        return float(sigmoid(self.model.decision(row[None, :])[0]))
