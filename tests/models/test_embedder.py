"""The process embedder (the default runtime): normalised float32 rows, in input order, that carry meaning."""

from __future__ import annotations

import numpy as np
import pytest

from services.models.embedder import DIMENSION, get_embedder

pytestmark = pytest.mark.models  # the real embedder / local model

TEXTS = [
    "The cooperative cleans the rooftop solar panels twice a year, in April and in October.",
    "wind",
    "Members meet at the annual general meeting in March to vote on the accounts.",
    "How often are the solar panels on the roof cleaned?",
]


def test_rows_are_normalised_in_input_order_and_match_the_model() -> None:
    embedder = get_embedder()
    vectors = embedder.encode(TEXTS, batch_size=2)
    assert vectors.shape == (len(TEXTS), DIMENSION) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    one_by_one = np.vstack([embedder.encode([t]) for t in TEXTS])
    # Batching never reorders rows. int8 activations are quantised with one scale per pass, so a
    # row moves slightly with its batch-mates (fp32 runtimes agree to 1e-5: test_onnx_embedder).
    assert ((vectors * one_by_one).sum(axis=1) >= 0.98).all()
    question = vectors[3]
    assert int(np.argmax(vectors[:3] @ question)) == 0  # the cleaning sentence answers the question
    assert embedder.encode([]).shape == (0, DIMENSION)
