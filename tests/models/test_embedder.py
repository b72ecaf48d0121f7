"""The real MiniLM embedder: batches grouped by token length give the vectors plain encode gives."""

from __future__ import annotations

import numpy as np

from services.models.embedder import DIMENSION, get_embedder

SHORT = ["wind", "tidal power", "solar panels", "heat pumps"]
LONG = [
    "The cooperative cleans the rooftop panels twice a year, in April and in October, and records "
    "every inspection of the inverters and the cabling in the maintenance log kept at the depot. " * 2,
    "Members meet at the annual general meeting in March, where the board presents the accounts, "
    "the maintenance plan and the tariffs proposed for the next year, and members vote on them. " * 2,
]


def test_mixed_lengths_are_batched_by_length_and_match_plain_encode() -> None:
    embedder = get_embedder()
    texts = [LONG[0], SHORT[0], SHORT[1], LONG[1], SHORT[2], SHORT[3]]
    batches = embedder._batches(texts, batch_size=32)
    assert sorted(i for b in batches for i in b) == list(range(len(texts)))
    assert {0, 3} in [set(b) for b in batches]  # the two long texts together, apart from the short ones
    assert all(not ({0, 3} & set(b)) for b in batches if set(b) != {0, 3})
    assert max(len(b) for b in embedder._batches(SHORT * 10, batch_size=8)) == 8

    vectors = embedder.encode(texts)
    plain = embedder.sentence_transformer.encode(texts, batch_size=32, normalize_embeddings=True,
                                                 convert_to_numpy=True, show_progress_bar=False)
    assert vectors.shape == (len(texts), DIMENSION) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, plain, atol=1e-5)  # same rows, same order
    assert float(vectors[0] @ vectors[3]) > float(vectors[0] @ vectors[1])  # meaning, not noise
