"""What this host's CPU offers the int8 kernels: read once from ``/proc/cpuinfo`` (Linux), else unknown.

ONNX Runtime's MLAS picks its quantised GEMM kernel by these flags at load time. Which one runs
decides whether uint8 x int8 products can saturate: on AVX2 without VNNI the U8S8 kernel sums
pairs of products into 16 bits (``vpmaddubsw``), while the VNNI kernels and every U8U8 kernel
(both operands widened to 16 bits, ``vpmaddwd``) accumulate exactly in 32 bits. Recorded in
benchmark results and ``/v1/health`` so a figure or a replica can be traced to its kernel.
"""

from __future__ import annotations

import pathlib
import platform
from dataclasses import dataclass
from functools import lru_cache

INT8_FLAGS = ("avx2", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8")
"""The flags that select an x86 int8 GEMM path, in ``/proc/cpuinfo``'s spelling."""


@dataclass(frozen=True)
class CpuFeatures:
    model: str
    """The CPU's model name, or the platform's processor string where there is no ``/proc/cpuinfo``."""
    flags: tuple[str, ...]
    """The subset of ``INT8_FLAGS`` this CPU has."""

    @property
    def vnni(self) -> bool:
        return "avx512_vnni" in self.flags or "avx_vnni" in self.flags

    @property
    def int8_path(self) -> str:
        """The widest int8 dot-product path: ``amx``, ``avx512-vnni``, ``avx-vnni``, ``avx512bw``, ``avx2`` or ``other``."""
        for flag, path in (("amx_int8", "amx"), ("avx512_vnni", "avx512-vnni"), ("avx_vnni", "avx-vnni"),
                           ("avx512bw", "avx512bw"), ("avx2", "avx2")):
            if flag in self.flags:
                return path
        return "other"

    def as_dict(self) -> dict:
        return {"model": self.model, "flags": list(self.flags), "vnni": self.vnni, "int8_path": self.int8_path,
                "machine": platform.machine()}


def parse_cpuinfo(text: str) -> CpuFeatures:
    """The first processor's model name and int8 flags from the text of ``/proc/cpuinfo``."""
    model, flags = "", set[str]()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not model:
            model = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
    return CpuFeatures(model or platform.processor() or "unknown", tuple(f for f in INT8_FLAGS if f in flags))


@lru_cache(maxsize=1)
def cpu_features() -> CpuFeatures:
    try:
        return parse_cpuinfo(pathlib.Path("/proc/cpuinfo").read_text(errors="replace"))
    except OSError:
        return CpuFeatures(platform.processor() or "unknown", ())
