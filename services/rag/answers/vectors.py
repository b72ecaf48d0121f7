"""Sentence embeddings with a bounded in-process cache.

Answering embeds the sentences of every retrieved chunk; popular chunks come back again and
again, so their sentence vectors are kept (keyed by exact text) instead of recomputed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from services.rag.retrieval.ports import QueryEncoder


class CachedEncoder:
    def __init__(self, encoder: QueryEncoder, capacity: int = 50_000) -> None:
        self._encoder = encoder
        self._capacity = capacity
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            fresh = self._encoder.encode(missing)
            with self._lock:
                for text, vector in zip(missing, fresh, strict=True):
                    self._cache[text] = vector
                    self._cache.move_to_end(text)
                while len(self._cache) > self._capacity:
                    self._cache.popitem(last=False)
        with self._lock:
            rows = [self._cache[t] if t in self._cache else None for t in texts]
        if any(r is None for r in rows):  # evicted between the two locks by a concurrent caller
            return self._encoder.encode(texts)
        return np.stack([r for r in rows if r is not None]) if rows else np.zeros((0, 0), dtype=np.float32)
