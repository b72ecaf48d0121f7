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
    smoothing scales; its own vectors), ``onnx`` (fp32: PyTorch's vectors) or ``torch`` (sentence-transformers; the
    one for DOCUTHINKER_DEVICE=cuda). int8 weights are uint8, so every x86 CPU computes the same vectors
    (services/models/int8_kernels.py). The default is the rule of bench/embed_bench.py: the fastest variant within
    0.005 SciFact dense nDCG@10 (full corpus) of PyTorch with mean cosine >= 0.99, else fp32 ONNX.
    bench/results/embed-2026-12-04.json: int8 2.28x PyTorch, mean cosine 0.9978, dense nDCG@10 0.6859 vs 0.6844
    (fused 0.7311 vs 0.7292); fp32 1.30x. With two one-thread streams (embed-streams-2026-12-06.json): int8
    2.87x, fp32 1.38x. An index of another runtime's vectors is refused at startup (set this
    back, or re-embed with DOCUTHINKER_RAG_REINDEX_ON_MODEL_CHANGE=true)."""
    cache_dir: pathlib.Path | None = None
    """Where exported ONNX files are kept, one folder per weights hash; unset: the install's export (``make setup``
    writes it under ``<venv>/share/docuthinker/models``), else ``<DOCUTHINKER_DATA_DIR>/models`` on first use."""
    threads: int = Field(default=1, ge=1, le=256)
    """ONNX Runtime intra-op threads of one forward pass (how many passes run at once: ``streams``)."""
    streams: int = Field(default=0, ge=0, le=256)
    """ONNX forward passes run at once per process (each of ``threads`` threads; concurrent requests' batches share
    them); 0: cores / threads. On 2 cores, 700 SciFact chunks in one call: two one-thread streams 128.4 / 126.6 /
    129.1 chunks/s, one two-thread pass 96.9 / 96.9 / 95.7, one one-thread pass 66.8 / 67.0 / 67.0 (int8, batch 2,
    2026-12-06). Batches of 2 are too small for a pass's two threads to keep each other busy."""
    batch_size: int = Field(default=0, ge=0, le=512)
    """Texts per forward pass (texts are sorted by length first, so a batch pads little); 0: the runtime's
    measured best (``BEST_BATCH_SIZE``: int8 ONNX 1, fp32 ONNX 2, PyTorch 16). On 2 cores ONNX Runtime gains
    nothing from larger batches and loses to padding in the small, mixed passes of concurrent uploads
    (services/rag/README.md)."""
    batch_wait_ms: float = Field(default=5.0, ge=0, le=1000)
    """How long a forward pass waits for texts from other concurrent requests to fill it (micro-batching)."""
    batch_max_texts: int = Field(default=256, ge=1, le=8192)
    """Most texts gathered from concurrent requests into one ``encode`` call."""
    verify_kernels: bool = True
    """Embed a few probe texts when the int8 model loads and refuse to start (``IncompatibleKernelsError``) when
    they differ from the committed reference vectors: this CPU's kernels would not match an index made on another
    host (services/models/int8_kernels.py)."""


BEST_BATCH_SIZE: dict[str, int] = {"onnx": 2, "onnx-int8": 1, "torch": 16}
"""Chunks/s on 768 SciFact chunks in one call, batch 4 / 8 / 16: fp32 ONNX 53.2 / 50.9 / 49.4, int8 80.9 / 77.9 /
73.6, PyTorch 37.3 / 40.6 / 41.9. ONNX batch 2 ties batch 4 there (480 chunks: fp32 51.1 and 52.2 vs 50.6 and
53.6; int8 76.9 and 77.0 vs 76.4 and 79.3) and wins in the small passes concurrent uploads make (passes of 19
texts: fp32 46.8 / 50.3 vs 44.7 / 47.2, int8 70.4 / 71.1 vs 66.6 / 69.7; of 8: fp32 47.0 / 47.9 vs 40.4 / 41.1).
Through Envoy, 240 abstracts uploaded 8 at a time ran at 16.9 / 16.5 docs/s with batch 2 against 15.5 / 15.6
with 4 (two rounds each, alternated). All on 2 cores, 2026-12-03.

int8 runs one text per pass (2026-12-06): its activations are quantised with one scale per pass, so at batch 2 a
text's vector moved with whichever text shared its pass; alone it is the same vector every time and no pass pads.
Quality and agreement at batch 1 against 2: bench/results/int8-batch-2026-12-06.json, summarised in
services/rag/README.md ("Batch size by measurement")."""


def batch_size_for(settings: EmbedderSettings, runtime: str) -> int:
    return settings.batch_size or BEST_BATCH_SIZE[runtime]


@lru_cache(maxsize=1)
def embedder_settings() -> EmbedderSettings:
    return EmbedderSettings()
