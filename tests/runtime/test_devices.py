"""One device rule for every model of a process."""

from __future__ import annotations

import sys
import types

from services.runtime.devices import compute_device


def _torch_with_gpu(monkeypatch, available: bool) -> None:
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: available))
    monkeypatch.setitem(sys.modules, "torch", fake)


def test_the_cpu_unless_a_cuda_device_is_asked_for_and_there(monkeypatch):
    _torch_with_gpu(monkeypatch, True)
    assert compute_device("cpu") == "cpu"
    assert compute_device("CUDA:1") == "cuda:1"
    monkeypatch.setenv("DOCUTHINKER_DEVICE", "cuda")
    assert compute_device() == "cuda", "the setting, when the caller names none"
    _torch_with_gpu(monkeypatch, False)
    assert compute_device() == "cpu", "no GPU: the CPU, not a failed load"


def test_a_cpu_only_install_without_torch_falls_back_to_the_cpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    assert compute_device("cuda") == "cpu"
