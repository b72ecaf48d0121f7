"""The ONNX Runtime embedders against the PyTorch model on fixed sentences, and the export cache."""

from __future__ import annotations

import numpy as np
import pytest

from services.models import onnx_export
from services.models.embedder import DIMENSION, build_embedder, identity
from services.models.int8_calibration import scales_from
from services.models.int8_smoothing import load_scales, scales_digest
from services.models.settings import EmbedderSettings

pytestmark = pytest.mark.models  # exports and runs the real MiniLM (PyTorch and ONNX Runtime)

SENTENCES = [
    "The cooperative cleans the rooftop solar panels twice a year, in April and in October.",
    "wind",
    "Members meet at the annual general meeting in March to vote on the accounts.",
    "How often are the solar panels on the roof cleaned?",
    "Le conseil d'administration se réunit chaque trimestre.",
    " ".join(["A very long sentence that runs past the model's limit of two hundred and fifty-six tokens."] * 20),
]


@pytest.fixture(scope="module")
def settings(tmp_path_factory) -> EmbedderSettings:
    return EmbedderSettings(cache_dir=tmp_path_factory.mktemp("onnx-cache"))


@pytest.fixture(scope="module")
def torch_vectors(settings) -> np.ndarray:
    return build_embedder(settings, "torch").encode(SENTENCES)


@pytest.mark.parametrize(("runtime", "floor"), [("onnx", 0.9999), ("onnx-int8", 0.99)])
def test_onnx_embeddings_agree_with_pytorch(settings, torch_vectors, runtime: str, floor: float) -> None:
    embedder = build_embedder(settings, runtime)
    vectors = embedder.encode(SENTENCES, batch_size=4)
    assert vectors.shape == (len(SENTENCES), DIMENSION) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * torch_vectors).sum(axis=1)
    assert cosines.min() >= floor, cosines
    assert int(np.argmax(vectors[[0, 2]] @ vectors[3])) == 0  # the cleaning sentence answers the question


def test_fp32_onnx_rows_do_not_depend_on_their_batch(settings) -> None:
    embedder = build_embedder(settings, "onnx")
    together = embedder.encode(SENTENCES, batch_size=8)
    alone = np.vstack([embedder.encode([s]) for s in SENTENCES])
    np.testing.assert_allclose(together, alone, atol=1e-5)  # length sorting never reorders rows
    assert embedder.encode([]).shape == (0, DIMENSION)


def test_int8_rows_at_the_default_batch_are_those_of_the_text_alone(settings) -> None:
    """int8 quantises activations per pass: one text per pass makes a vector independent of its neighbours."""
    embedder = build_embedder(settings, "onnx-int8")
    assert embedder.batch_size == 1
    together = embedder.encode(SENTENCES[::-1] + SENTENCES)
    alone = np.vstack([embedder.encode([s]) for s in SENTENCES])
    np.testing.assert_array_equal(together[len(SENTENCES):], alone)
    np.testing.assert_array_equal(together[: len(SENTENCES)], alone[::-1])


def test_concurrent_streams_give_the_rows_of_one_stream(settings) -> None:
    """Batches run on two streams at once, and concurrent calls share them; each row lands where it belongs."""
    from concurrent.futures import ThreadPoolExecutor

    one = build_embedder(settings.model_copy(update={"streams": 1}), "onnx-int8")
    two = build_embedder(settings.model_copy(update={"streams": 2}), "onnx-int8")
    assert (one.streams, two.streams, two.threads) == (1, 2, 1)
    texts = SENTENCES * 3
    with ThreadPoolExecutor(3) as callers:
        results = list(callers.map(lambda n: two.encode(texts[n:], batch_size=2), range(3)))
    for n, rows in enumerate(results):  # int8 rows depend slightly on their batch: same call, same batches
        np.testing.assert_allclose(rows, one.encode(texts[n:], batch_size=2), atol=1e-6)


def test_a_started_call_counts_its_passes_until_each_runs(settings) -> None:
    """``start`` queues the passes; ``wait_for_room`` returns once all have started; the rows are ``encode``'s."""
    embedder = build_embedder(settings.model_copy(update={"streams": 1}), "onnx-int8")
    rows = embedder.start(SENTENCES, batch_size=2)
    embedder.wait_for_room()
    assert embedder._queued == 0
    np.testing.assert_allclose(rows(), embedder.encode(SENTENCES, batch_size=2), atol=1e-6)


def test_export_is_cached_by_the_weights_hash(settings, torch_vectors, monkeypatch) -> None:
    build_embedder(settings, "onnx")  # exported by now
    monkeypatch.setattr(onnx_export, "_export_fp32", lambda *a: pytest.fail("re-exported despite a cached file"))
    build_embedder(settings, "onnx-int8")
    folders = [p.name for p in settings.cache_dir.iterdir()]
    assert folders == [onnx_export.export_dir(settings.cache_dir, "all-MiniLM-L6-v2", identity_hash()).name]
    other = onnx_export.export_dir(settings.cache_dir, "all-MiniLM-L6-v2", "0" * 64)
    assert other != settings.cache_dir / folders[0]  # other weights: another folder, a fresh export


def identity_hash() -> str:
    from services.models.embedder import WEIGHTS_SHA256

    return WEIGHTS_SHA256


def test_identity_separates_precisions_not_runtimes() -> None:
    assert identity("torch") == identity("onnx")  # the same fp32 function (cosine > 0.9999 above)
    assert identity("onnx-int8") != identity("onnx")


def test_the_export_fuses_attention_and_int8_quantises_every_matmul_behind_a_smoothing_mul(settings) -> None:
    """Version 1 exported SDPA attention that no optimizer pass fused (0.94x PyTorch, bench/onnx_variants.py)."""
    import collections

    import onnx

    build_embedder(settings, "onnx-int8")
    folder = onnx_export.export_dir(settings.cache_dir, "all-MiniLM-L6-v2", identity_hash())
    fp32 = collections.Counter(n.op_type for n in onnx.load(str(folder / "model-fp32.onnx")).graph.node)
    int8 = onnx.load(str(folder / onnx_export.FILES["onnx-int8"])).graph
    ops = collections.Counter(n.op_type for n in int8.node)
    assert fp32["Attention"] == 6 and fp32["EmbedLayerNormalization"] == 1
    # Per layer: the attention, its output dense and both feed-forward MatMuls, each reading a smoothed input.
    assert ops["QAttention"] == 6 and ops["Attention"] == 0 and ops["MatMulInteger"] == 18 and ops["MatMul"] == 0
    smooth = [n for n in int8.node if n.name.endswith("/smooth")]
    assert len(smooth) == 24 and {n.op_type for n in smooth} == {"Mul"}
    # uint8 weights (int8_kernels): never an earlier int8 file's vectors, whose int8 weights drift on AVX2
    assert identity("onnx-int8").endswith(f"/int8u8-smooth-{scales_digest()}")


def test_scales_that_do_not_match_the_graph_are_refused(settings) -> None:
    import onnx

    folder = onnx_export.export_dir(settings.cache_dir, "all-MiniLM-L6-v2", identity_hash())
    build_embedder(settings, "onnx")
    model = onnx.load(str(folder / "model-fp32.onnx"))
    scales = load_scales()
    with pytest.raises(onnx_export.ScalesMismatchError):
        onnx_export._smooth(model, {k: v for k, v in scales.items() if k != "Attention_0"})
    with pytest.raises(onnx_export.ScalesMismatchError):
        onnx_export._smooth(model, scales | {"Attention_9": scales["Attention_0"]})


def test_smoothing_leaves_the_fp32_function_unchanged(settings, torch_vectors) -> None:
    """Dividing an input channel by s and multiplying the weight row by s is exact but for rounding."""
    import onnx

    from services.models.embedder import MODEL_NAME, verified_model_path
    from services.models.onnx_embedder import OnnxEmbedder

    folder = onnx_export.export_dir(settings.cache_dir, "all-MiniLM-L6-v2", identity_hash())
    build_embedder(settings, "onnx")
    model = onnx.load(str(folder / "model-fp32.onnx"))
    onnx_export._smooth(model, load_scales())
    smoothed = settings.cache_dir / "smoothed-fp32.onnx"
    onnx.save(model, str(smoothed))
    embedder = OnnxEmbedder(smoothed, verified_model_path() / "tokenizer.json", name=MODEL_NAME,
                            dimension=DIMENSION, identity="probe", runtime="probe")
    assert (embedder.encode(SENTENCES) * torch_vectors).sum(axis=1).min() >= 0.9999
    smoothed.unlink()


def test_the_scales_rule_raises_only_channels_above_the_median() -> None:
    maxima = {"Attention_0": np.array([1.0, 2.0, 2.0, 3.0, 30.0], dtype=np.float32)}
    np.testing.assert_allclose(scales_from(maxima)["Attention_0"], [1.0, 1.0, 1.0, 1.5, 15.0])


def test_an_unset_cache_uses_the_install_export_when_setup_made_one(tmp_path, monkeypatch) -> None:
    """Every data directory of one install (each test's, each replica's) shares the export of ``make setup``."""
    from services.models import embedder

    install = tmp_path / "install"
    monkeypatch.setattr(embedder, "install_cache_dir", lambda: install)
    monkeypatch.setenv("DOCUTHINKER_DATA_DIR", str(tmp_path / "data"))
    unset = EmbedderSettings(cache_dir=None)
    assert embedder.onnx_cache_dir(unset) == tmp_path / "data" / "models"  # no install export: first use exports
    folder = onnx_export.export_dir(install, "all-MiniLM-L6-v2", identity_hash())
    folder.mkdir(parents=True)
    (folder / onnx_export.FILES["onnx"]).write_bytes(b"")
    assert embedder.onnx_cache_dir(unset) == tmp_path / "data" / "models"  # half an export is not one
    (folder / onnx_export.FILES["onnx-int8"]).write_bytes(b"")
    assert embedder.onnx_cache_dir(unset) == install
    assert embedder.onnx_cache_dir(EmbedderSettings(cache_dir=tmp_path / "mine")) == tmp_path / "mine"
