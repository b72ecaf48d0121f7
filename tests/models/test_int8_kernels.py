"""The int8 embedder computes the same vectors on every x86 CPU (issue #44), and a host that does not is refused.

The property is checked on the exported graph itself, so it holds whatever CPU runs the test: every
integer GEMM multiplies uint8 activations by uint8 weights, which MLAS computes in 16 x 16 -> 32-bit
pairs on every x86 path. The worst-case products then run on this CPU's own kernel.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from services.models import int8_kernels
from services.models.cpu_features import parse_cpuinfo
from services.models.embedder import build_embedder
from services.models.int8_kernels import (
    PAIR_SUM_LIMIT,
    IncompatibleKernelsError,
    integer_gemms,
    verify,
    worst_pair_sum,
)
from services.models.settings import EmbedderSettings

AVX2_ONLY = "model name\t: AMD EPYC\nflags\t\t: fpu sse4_1 sse4_2 avx avx2 fma bmi2\n"
VNNI = "model name\t: Intel(R) Xeon(R) Platinum 8480+\nflags\t\t: avx2 avx512f avx512bw avx512_vnni amx_int8\n"


def test_cpu_features_name_the_int8_path() -> None:
    avx2, vnni = parse_cpuinfo(AVX2_ONLY), parse_cpuinfo(VNNI)
    assert (avx2.model, avx2.flags, avx2.vnni, avx2.int8_path) == ("AMD EPYC", ("avx2",), False, "avx2")
    assert (vnni.vnni, vnni.int8_path) == (True, "amx")
    assert parse_cpuinfo("").flags == ()


def test_the_saturation_bound_separates_the_formats() -> None:
    # The pair sums of a 16-bit-pair kernel: int8 weights overflow 16 bits, uint8 ones are widened to 32.
    assert worst_pair_sum("uint8", "int8") > 2**15 - 1
    assert worst_pair_sum("uint8", "uint8") <= PAIR_SUM_LIMIT


@pytest.mark.models
class TestExportedGraph:
    @pytest.fixture(scope="class")
    def embedder(self, tmp_path_factory):
        return build_embedder(EmbedderSettings(cache_dir=tmp_path_factory.mktemp("onnx-cache")), "onnx-int8")

    def test_every_integer_gemm_multiplies_unsigned_bytes(self, embedder) -> None:
        import onnx

        gemms = integer_gemms(onnx.load(str(embedder.model_file)))
        assert len(gemms) >= 6 * 4, gemms  # per layer: the fused attention, its output and two feed-forward MatMuls
        assert {(activation, weight) for _, activation, weight in gemms} == {("uint8", "uint8")}, gemms

    def test_the_committed_reference_is_this_export_and_this_cpu_matches_it(self, embedder) -> None:
        result = int8_kernels.check(embedder, embedder.model_file)
        assert result.same_file, "the export changed: python -m services.models.int8_reference --write"
        assert result.passed and result.min_cosine >= 0.9999, result
        assert int8_kernels.last_check() is not None  # build_embedder verified it at load

    def test_drifting_vectors_are_refused(self, embedder, tmp_path) -> None:
        reference = json.loads(int8_kernels.REFERENCE.read_text())
        vectors = np.asarray(reference["vectors"])
        drifted = vectors.copy()
        drifted[-1] = vectors[-1] + 0.05 * np.roll(vectors[-1], 7)  # one probe at cosine ~0.999
        drifted[-1] /= np.linalg.norm(drifted[-1])
        path = tmp_path / "reference.json"
        path.write_text(json.dumps(reference | {"vectors": drifted.tolist()}))
        with pytest.raises(IncompatibleKernelsError, match="min cosine"):
            verify(embedder, embedder.model_file, path)
        # Another export of the model (other library versions) is held to the agreement floor only.
        path.write_text(json.dumps(reference | {"vectors": drifted.tolist(), "model_sha256": "0" * 64}))
        assert verify(embedder, embedder.model_file, path).floor == int8_kernels.OTHER_FILE_FLOOR


@pytest.mark.parametrize("rows", [1, 8, 64])
def test_worst_case_unsigned_products_are_exact_on_this_cpu(rows: int) -> None:
    """255 x 255 over 512 terms, through the kernel MLAS picks here: exact, as on every x86 path."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    depth, width = 512, 64
    weights = np.full((depth, width), 255, dtype=np.uint8)
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B"], ["Y"])], "worst-case",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, [rows, depth])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, [rows, width])],
        [numpy_helper.from_array(weights, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    activations = np.full((rows, depth), 255, dtype=np.uint8)
    out = session.run(None, {"A": activations})[0]
    np.testing.assert_array_equal(out, activations.astype(np.int64) @ weights.astype(np.int64))
