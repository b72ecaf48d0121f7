"""The packaged Whisper weights: pinned hashes, assembly of split files, refusal of tampered files."""

from __future__ import annotations

import hashlib
import os
import pathlib

import pytest

from services.runtime.errors import FailedPrecondition
from services.speech import assets
from services.speech.assets import BASE, TINY_EN, ModelAsset, model_dir, verify

# Prefixes and suffixes of the upstream hashes (Systran/faster-whisper-base revision ebe41f7) as
# published in issue 19: the pinned values must be those files, not whatever the package holds.
UPSTREAM_BASE = {
    "config.json": ("56a6d811", "4da9a"),
    "model.bin": ("d01c3014", "a0a6a9"),
    "tokenizer.json": ("fb7b6319", "d0ab"),
    "vocabulary.txt": ("34ce3fe1", "3913"),
}


def test_base_hashes_are_the_upstream_ones() -> None:
    for name, (head, tail) in UPSTREAM_BASE.items():
        pinned = BASE.sha256[name]
        assert len(pinned) == 64 and pinned.startswith(head) and pinned.endswith(tail), name


def test_base_is_assembled_into_a_cache_dir_named_by_its_hashes(tmp_path: pathlib.Path) -> None:
    umask = os.umask(0o022)
    try:
        directory = model_dir(BASE, tmp_path)
    finally:
        os.umask(umask)
    assert directory.parent == tmp_path and directory.name.startswith("whisper-base-")
    assert sorted(p.name for p in directory.iterdir()) == sorted(assets.MODEL_FILES)
    assert assets.sha256_of(directory / "model.bin") == BASE.sha256["model.bin"]
    assert model_dir(BASE, tmp_path) == directory  # reused, verified again
    assert directory.stat().st_mode & 0o055 == 0o055  # others may read it (umask 022), unlike a mkdtemp folder
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left behind


def test_tiny_en_is_used_in_place_and_verified() -> None:
    directory = model_dir(TINY_EN)
    assert (directory / "model.bin").is_file()
    verify(directory, TINY_EN)


def _fake_asset(directory: pathlib.Path) -> ModelAsset:
    hashes = {}
    for name in assets.MODEL_FILES:
        (directory / name).write_bytes(name.encode())
        hashes[name] = hashlib.sha256(name.encode()).hexdigest()
    return ModelAsset("fake", hashes, {}, multilingual=False)


def test_a_tampered_or_missing_file_is_refused(tmp_path: pathlib.Path) -> None:
    asset = _fake_asset(tmp_path)
    verify(tmp_path, asset)
    (tmp_path / "model.bin").write_bytes(b"tampered")
    with pytest.raises(FailedPrecondition, match="model.bin has sha256") as refused:
        verify(tmp_path, asset)
    assert refused.value.reason == "SPEECH_UNAVAILABLE"
    (tmp_path / "model.bin").unlink()
    with pytest.raises(FailedPrecondition, match="sha256 missing"):
        verify(tmp_path, asset)


def test_a_missing_package_says_what_to_install() -> None:
    asset = ModelAsset("gone", BASE.sha256, {"model.bin": (("no_such_whisper_package", "model.bin"),)}, True)
    with pytest.raises(FailedPrecondition, match="no_such_whisper_package is not installed"):
        model_dir(asset)
