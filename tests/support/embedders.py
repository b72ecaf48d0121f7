"""The one stand-in for the sentence embedder in unit tests (service and e2e tests load the real MiniLM).

Words hashed into ``dimension`` buckets and L2-normalised: texts that share words are similar, the same text
always gets the same vector, and nothing is loaded. ``calls`` records each batch's size, for the tests that
count how often ingestion embeds.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

WORD = re.compile(r"\w+")


class HashEmbedder:
    name = "test-hash-embedder"

    def __init__(self, dimension: int = 384) -> None:
        self.dimension = dimension
        self.calls: list[int] = []

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in WORD.findall(text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest()[:8], 16) % self.dimension] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms
