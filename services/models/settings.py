"""Settings of the sentence embedder, read from ``DOCUTHINKER_EMBED_*`` environment variables.

One embedder per process (rag, nlp, orchestrator); each reads these once on first use.
"""

from __future__ import annotations

import pathlib
from functools import lru_cache
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

Runtime = Literal["onnx-int8", "onnx", "torch"]


class EmbedderSettings(BaseSettings):
    """Which runtime runs all-MiniLM-L6-v2, and how it is fed."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_EMBED_", frozen=True, extra="ignore")

    runtime: Runtime = "torch"
    """``torch`` (sentence-transformers), ``onnx`` (ONNX Runtime fp32, the same vectors) or ``onnx-int8``
    (feed-forward weights dynamically quantised; its own vectors). The rule for the default (bench/embed_bench.py):
    the fastest variant within 0.005 SciFact nDCG@10 of PyTorch with mean cosine >= 0.99. Export version 2 (fused
    attention) measured fp32 ONNX at 1.38x and int8 at 2.23x PyTorch, int8 at mean cosine 0.9956 and nDCG@10 0.0002
    below PyTorch on the quick SciFact sample only (bench/results/embed-int8-scope-2026-12-03.json); the rule asks
    for the full corpus, and int8 needs a re-index, so PyTorch stays the default until ``make bench-embed``
    confirms int8 there. Vectors of another precision in an index are refused at startup."""
    cache_dir: pathlib.Path | None = None
    """Where exported ONNX files are kept, one folder per weights hash; unset: ``<DOCUTHINKER_DATA_DIR>/models``."""
    threads: int = Field(default=0, ge=0, le=256)
    """ONNX Runtime intra-op threads of one forward pass; 0: all cores (one pass runs at a time per process)."""
    batch_size: int = Field(default=32, ge=1, le=512)
    """Texts per forward pass (texts are sorted by length first, so a batch pads little)."""
    batch_wait_ms: float = Field(default=5.0, ge=0, le=1000)
    """How long a forward pass waits for texts from other concurrent requests to fill it (micro-batching)."""
    batch_max_texts: int = Field(default=256, ge=1, le=8192)
    """Most texts gathered from concurrent requests into one ``encode`` call."""


@lru_cache(maxsize=1)
def embedder_settings() -> EmbedderSettings:
    return EmbedderSettings()
