"""Which compute device a model runs on: chosen here once for every model of a process (the embedder, Whisper)."""

from __future__ import annotations


def compute_device(requested: str | None = None) -> str:
    """``requested`` (else ``DOCUTHINKER_DEVICE``) when it names a CUDA device and one is there; else "cpu".

    A missing GPU or a CPU-only torch falls back to the CPU instead of failing the model's load."""
    from services.runtime.config import MeshSettings

    wanted = (requested or MeshSettings().device or "cpu").lower()
    if not wanted.startswith("cuda"):
        return "cpu"
    try:
        import torch
    except ImportError:
        return "cpu"
    return wanted if torch.cuda.is_available() else "cpu"
