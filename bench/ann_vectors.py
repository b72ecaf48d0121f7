"""Realistic vectors for the ANN scale benchmark: real MiniLM sentence vectors, expanded.

Base: every sentence (30+ characters) of the SciFact abstracts and the SQuAD articles, embedded
by the production PyTorch MiniLM (about 52k vectors, cached under data/bench-cache by the texts'
hash). Queries: SciFact train claims and SQuAD questions, embedded the same way; none of them is
an index member, so a search meets the distances a real question meets.

Expansion to 100k/1M: vector ``i`` past the base is ``normalise(b + s * n)`` for a base vector
``b`` taken in turn and ``n`` drawn from N(0, C), C the covariance of the base vectors. Noise
shaped like the data stays on the data's low-dimensional manifold (i.i.d. 384-d noise would
move every copy off it, which real chunks never are), and ``s`` sets how close a copy stays to
its source (cosine about 0.9 at s=0.5): a corpus of paraphrases and overlapping chunks, not of
identical twins, which no real 1M-chunk tenant is made of either.
"""

from __future__ import annotations

import hashlib
import pathlib
import re

import numpy as np

from bench import scifact, squad
from bench.shared import SHARED

CACHE = pathlib.Path("data/bench-cache")
DATA = SHARED / "data"
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")


def texts() -> tuple[list[str], list[str]]:
    """(index sentences, question texts), deduplicated, in a fixed order."""
    corpus, claims, _ = scifact.load(DATA / "scifact")
    articles, questions = squad.load(DATA / "squad")
    sentences = [s for t in [*corpus.values(), *articles.values()] for s in _SENTENCE.split(t) if len(s) >= 30]
    asked = [*claims.values(), *(q.text for q in questions)]
    members = set(sentences)
    return list(dict.fromkeys(sentences)), [q for q in dict.fromkeys(asked) if q not in members]


def _encode(items: list[str], name: str) -> np.ndarray:
    digest = hashlib.sha256("\n".join(items).encode()).hexdigest()[:16]
    path = CACHE / f"ann-scale-{name}-{digest}.npy"
    if path.exists():
        return np.load(path)
    from services.models.embedder import Embedder

    vectors = Embedder(batch_size=64).encode(items)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def base_and_queries() -> tuple[np.ndarray, np.ndarray]:
    sentences, questions = texts()
    return _encode(sentences, "base"), _encode(questions, "queries")


def expand(base: np.ndarray, n: int, scale: float = 0.5, seed: int = 5) -> np.ndarray:
    """``n`` unit vectors: the base ones first, then noisy copies of them in turn (see the module doc)."""
    out = np.empty((n, base.shape[1]), dtype=np.float32)
    take = min(n, len(base))
    out[:take] = base[:take]
    if n <= take:
        return out
    rng = np.random.default_rng(seed)
    centred = base - base.mean(axis=0)
    # Noise with the base's covariance: a standard normal through the base's principal axes.
    _, sigma, axes = np.linalg.svd(centred, full_matrices=False)
    shape = (sigma / np.sqrt(len(base)))[:, None] * axes
    for start in range(take, n, 50_000):
        stop = min(n, start + 50_000)
        sources = base[np.arange(start, stop) % len(base)]
        noise = rng.standard_normal((stop - start, len(sigma))).astype(np.float32) @ shape
        v = sources + scale * noise
        out[start:stop] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out
