"""Why the int8 embedder gives the same vectors on every x86 host, and the check that it does here.

The int8 graph quantises activations to uint8 per pass (``DynamicQuantizeLinear``) and its weights
to **uint8** per output channel (``onnx_export._quantise``), so every integer GEMM is U8U8. MLAS's
U8U8 kernels widen both operands to 16 bits and multiply pairs into 32-bit sums (``vpmaddwd``):
at most 2 x 255 x 255 = 130,050 per pair, far inside 32 bits, on SSE4.1, AVX2, AVX-VNNI and
AVX-512 alike. The int8 weights used before (U8S8) were exact only on VNNI CPUs; on AVX2 alone
MLAS sums pairs of uint8 x int8 products into 16 bits with saturation (255 x 127 x 2 = 64,770 >
32,767), which moved vectors to cosine 0.91 from PyTorch on an AMD EPYC (issue #44).

``verify`` embeds a few probe texts at load and compares them with the committed reference
vectors of the same int8 file (``int8_reference.json``, written by ``python -m
services.models.int8_reference --write``): a host whose kernels drift is refused with
``IncompatibleKernelsError`` instead of serving vectors that do not match its index. When the
exported file is not the one the reference was made from (other library versions), the check
still runs against the same vectors with the agreement floor of the quality rule.
"""

from __future__ import annotations

import hashlib
import json
import logging
import pathlib
from dataclasses import asdict, dataclass

import numpy as np

from services.models.cpu_features import cpu_features

log = logging.getLogger("docuthinker.models.int8")

REFERENCE = pathlib.Path(__file__).with_name("int8_reference.json")
PROBES = (
    "The cooperative cleans the rooftop solar panels twice a year, in April and in October.",
    "How often are the solar panels on the roof cleaned?",
    "Le conseil d'administration se réunit chaque trimestre.",
    "Revenue rose 12.5% to $4,310 million in the quarter ended September 30, 2023.",
    " ".join(["A very long sentence that runs past the model's limit of two hundred and fifty-six tokens."] * 20),
    "wind",
)
"""Short and long, English and not, numbers: the texts that showed the AVX2 drift (0.907 at worst)."""
SAME_FILE_FLOOR = 0.9999
"""Exact integer kernels leave only float rounding between hosts (about 1e-6 in cosine)."""
OTHER_FILE_FLOOR = 0.99
"""Another export of the same model (other library versions): the agreement floor of the runtime rule."""
PAIR_SUM_LIMIT = 2**31 - 1
"""The 32-bit accumulator a U8U8 pair sum lands in."""


class IncompatibleKernelsError(RuntimeError):
    """This host's int8 kernels give vectors unlike the reference: they would not match an index made elsewhere."""


@dataclass(frozen=True)
class KernelCheck:
    identity: str
    cpu_model: str
    int8_path: str
    vnni: bool
    min_cosine: float
    floor: float
    same_file: bool
    passed: bool

    def as_dict(self) -> dict:
        return asdict(self)


def sha256_of(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def integer_gemms(model) -> list[tuple[str, str, str]]:
    """(node, activation element type, weight element type) of every integer GEMM in an ONNX model.

    The activation's type is that of the ``DynamicQuantizeLinear`` (always uint8) or initializer
    feeding it; the weight is the node's constant input (``MatMulInteger`` B, ``QAttention`` weight).
    """
    from onnx import TensorProto

    names = {v: k for k, v in TensorProto.DataType.items()}
    initializers = {i.name: names[i.data_type].lower() for i in model.graph.initializer}
    produced = {out: node for node in model.graph.node for out in node.output}

    def element_type(name: str) -> str:
        if name in initializers:
            return initializers[name]
        node = produced.get(name)
        return "uint8" if node is not None and node.op_type == "DynamicQuantizeLinear" else "unknown"

    found = []
    for node in model.graph.node:
        if node.op_type == "MatMulInteger":
            found.append((node.name, element_type(node.input[0]), element_type(node.input[1])))
        elif node.op_type == "QAttention":
            found.append((node.name, element_type(node.input[0]), element_type(node.input[1])))
    return found


def worst_pair_sum(activation: str, weight: str) -> int:
    """The largest pair of products a 16-bit-pair kernel forms for these operand types."""
    bounds = {"uint8": 255, "int8": 128}
    return 2 * bounds[activation] * bounds[weight]


def embed_probes(embedder) -> np.ndarray:
    return np.vstack([embedder.encode([text]) for text in PROBES])  # one text per pass, as int8 runs


def write_reference(embedder, model_file: pathlib.Path, path: pathlib.Path = REFERENCE) -> None:
    vectors = embed_probes(embedder)
    path.write_text(json.dumps({
        "identity": embedder.identity, "model_file": model_file.name, "model_sha256": sha256_of(model_file),
        "made_on": cpu_features().as_dict(), "probes": list(PROBES),
        "vectors": [[round(float(x), 7) for x in row] for row in vectors],
    }, indent=1) + "\n")


def check(embedder, model_file: pathlib.Path, path: pathlib.Path = REFERENCE) -> KernelCheck:
    reference = json.loads(path.read_text())
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    same_file = reference["model_sha256"] == sha256_of(model_file)
    floor = SAME_FILE_FLOOR if same_file else OTHER_FILE_FLOOR
    cosines = (embed_probes(embedder) * expected).sum(axis=1)
    cpu = cpu_features()
    return KernelCheck(embedder.identity, cpu.model, cpu.int8_path, cpu.vnni, round(float(cosines.min()), 6), floor,
                       same_file, bool(cosines.min() >= floor))


_last: KernelCheck | None = None


def last_check() -> KernelCheck | None:
    """The check this process ran when it loaded its int8 embedder (None: it has not loaded one)."""
    return _last


def verify(embedder, model_file: pathlib.Path, path: pathlib.Path = REFERENCE) -> KernelCheck:
    """``check``, remembered for ``/v1/health``; raises ``IncompatibleKernelsError`` when it fails."""
    global _last
    result = check(embedder, model_file, path)
    _last = result
    if not result.passed:
        raise IncompatibleKernelsError(
            f"the int8 embedder's vectors on this CPU ({result.cpu_model}, {result.int8_path}) differ from the "
            f"reference (min cosine {result.min_cosine} < {result.floor}): they would not match vectors made on "
            "other hosts. Set DOCUTHINKER_EMBED_RUNTIME=onnx (fp32) on every replica and re-index, or report "
            "this CPU.")
    log.info("int8 kernels agree with the reference", extra={"fields": result.as_dict()})
    return result

