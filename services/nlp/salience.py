"""Sentence salience and Maximal Marginal Relevance selection over embeddings.

Salience is the cosine similarity of a sentence to the document centroid (what the whole
text is about) plus a small lead prior: opening sentences of a document tend to state its
point, which matters for short texts where centrality alone is noisy.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from services.nlp.prepared import PreparedText

LEAD_PRIOR = 0.1


def sentence_salience(prepared: PreparedText) -> np.ndarray:
    """Salience of each candidate sentence, row for row with ``prepared.vectors``."""
    vectors = prepared.vectors
    if len(vectors) == 0:
        return np.zeros(0, dtype=np.float32)
    centrality = vectors @ prepared.centroid
    total = max(1, len(prepared.spans) - 1)
    position = np.array([1.0 - i / total for i in prepared.candidates], dtype=np.float32)
    return centrality + LEAD_PRIOR * position


def mmr(
    vectors: np.ndarray,
    relevance: np.ndarray,
    limit: int,
    trade_off: float,
    accept: Callable[[int], bool] = lambda _: True,
) -> list[int]:
    """Row indices picked greedily by ``trade_off * relevance - (1 - trade_off) * max similarity to picks``.

    ``accept`` may veto a row (e.g. it would break a word budget); vetoed rows are skipped
    for good. Ties go to the earlier row, so the result is deterministic.
    """
    picked: list[int] = []
    remaining = list(range(len(relevance)))
    closest = np.zeros(len(relevance), dtype=np.float32)
    while remaining and len(picked) < limit:
        scores = trade_off * relevance[remaining] - (1.0 - trade_off) * closest[remaining]
        best = remaining.pop(int(np.argmax(scores)))
        if not accept(best):
            continue
        picked.append(best)
        similarity = vectors @ vectors[best]
        closest = similarity if len(picked) == 1 else np.maximum(closest, similarity)
    return picked
