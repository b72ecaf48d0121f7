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

    runtime: Runtime = "onnx-int8"
    """``onnx-int8`` (ONNX Runtime, every MatMul and the attention dynamically quantised after the committed
    smoothing scales; its own vectors, the same on every x86 CPU: services/models/int8_kernels.py), ``onnx`` (fp32:
    PyTorch's vectors) or ``torch`` (sentence-transformers; the one for DOCUTHINKER_DEVICE=cuda). An index of another
    runtime's vectors is refused at startup (set this back, or DOCUTHINKER_RAG_REINDEX_ON_MODEL_CHANGE=true).
    Default: the fastest variant within 0.005 SciFact nDCG@10 of PyTorch (bench/embed_bench.py's rule), int8 at
    2.28x PyTorch (bench/results/settings-measurements.md)."""
    cache_dir: pathlib.Path | None = None
    """Where exported ONNX files are kept, one folder per weights hash; unset: the install's export (``make setup``
    writes it under ``<venv>/share/docuthinker/models``), else ``<DOCUTHINKER_DATA_DIR>/models`` on first use."""
    threads: int = Field(default=1, ge=1, le=256)
    """ONNX Runtime intra-op threads of one forward pass (how many passes run at once: ``streams``)."""
    streams: int = Field(default=0, ge=0, le=256)
    """ONNX forward passes run at once per process (each of ``threads`` threads; concurrent requests' batches share
    them); 0: cores / threads. Default: one-thread passes side by side beat one pass using every core, whose small
    batches cannot keep two threads busy (bench/results/settings-measurements.md)."""
    batch_size: int = Field(default=0, ge=0, le=512)
    """Texts per forward pass (texts are sorted by length first, so a batch pads little); 0: the runtime's
    measured best (``BEST_BATCH_SIZE``: int8 ONNX 1, fp32 ONNX 2, PyTorch 16; bench/results/settings-measurements.md)."""
    batch_wait_ms: float = Field(default=5.0, ge=0, le=1000)
    """How long a forward pass waits for texts from other concurrent requests to fill it (micro-batching)."""
    batch_max_texts: int = Field(default=256, ge=1, le=8192)
    """Most texts gathered from concurrent requests into one ``encode`` call."""
    verify_kernels: bool = True
    """Embed a few probe texts when the int8 model loads and refuse to start (``IncompatibleKernelsError``) when
    they differ from the committed reference vectors: this CPU's kernels would not match an index made on another
    host (services/models/int8_kernels.py)."""


BEST_BATCH_SIZE: dict[str, int] = {"onnx": 2, "onnx-int8": 1, "torch": 16}
"""Each runtime's fastest batch on 2 cores, in one call and in the small passes of concurrent uploads; int8 runs one
text per pass because it quantises activations per pass, so a text's vector would move with the text beside it
(the measurements: bench/results/settings-measurements.md and int8-batch-2026-12-06.json)."""


def batch_size_for(settings: EmbedderSettings, runtime: str) -> int:
    return settings.batch_size or BEST_BATCH_SIZE[runtime]


@lru_cache(maxsize=1)
def embedder_settings() -> EmbedderSettings:
    return EmbedderSettings()
