"""Fakes at the embedding port (unit tests only; service tests use the real MiniLM model)."""

from __future__ import annotations

import threading

import numpy as np

from tests.support.embedders import HashEmbedder


class FailingEmbedder(HashEmbedder):
    """Raises on the ``fail_on``-th call (1-based), to inject a failure mid-embedding."""

    def __init__(self, fail_on: int) -> None:
        super().__init__()
        self.fail_on = fail_on

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        if len(self.calls) + 1 == self.fail_on:
            self.calls.append(len(texts))
            raise RuntimeError("injected embedding failure")
        return super().encode(texts, batch_size)


class GatedEmbedder(HashEmbedder):
    """Blocks every call until ``release`` is set, so tests can look at a half-done ingest."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        self.entered.set()
        if not self.release.wait(timeout=30):
            raise TimeoutError("gate never released")
        return super().encode(texts, batch_size)
