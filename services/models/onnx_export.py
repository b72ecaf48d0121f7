"""Exports the packaged all-MiniLM-L6-v2 weights to ONNX once, cached by the weights' hash.

The graph holds the whole sentence-transformers model: BERT, mean pooling over the attention
mask and L2 normalisation, so ONNX Runtime returns finished embeddings. The fp32 file is then
optimised for BERT (fused attention, embedding and skip layer norms, GELU: onnxruntime.transformers)
and the int8 variant is dynamically quantised from it (every MatMul with a constant weight and the fused
attention, uint8 weights: ``int8_kernels`` says why), after the outlier channels of their inputs are smoothed
into the weights with the committed scales of ``int8_smoothing`` (measured by ``int8_calibration``) (``_smooth``). Files are written under a temporary name and renamed,
so processes exporting at the same time (rag, nlp, orchestrator on a first start) never read a
half-written file; the folder name carries the weights' hash, so new weights mean a new export.
"""

from __future__ import annotations

import logging
import os
import pathlib

log = logging.getLogger("docuthinker.models.onnx")

EXPORT_VERSION = 2
"""Bumped when the exported graph changes, so older cached files are not reused. 2: eager attention
(version 1's graph had no fused Attention node, see ``_export_fp32``)."""
OPSET = 17


def export_dir(cache_root: pathlib.Path, model_name: str, weights_sha256: str) -> pathlib.Path:
    return pathlib.Path(cache_root) / f"{model_name}-{weights_sha256[:16]}-onnx{EXPORT_VERSION}"


def _int8_file() -> str:
    from services.models.int8_smoothing import scales_digest

    return f"model-int8u8-smooth-{scales_digest()}.onnx"


FILES = {"onnx": "model-fp32.onnx", "onnx-int8": _int8_file()}
"""The int8 file's name carries its weight type and its scales file's digest, so a new format or new scales
mean a new file; ``model-int8-smooth-<digest>.onnx`` (int8 weights: saturating on AVX2 without VNNI),
``model-int8.onnx`` (everything, unsmoothed), ``model-int8-ffn.onnx`` and ``model-int8-intermediate.onnx``
(feed-forward only) came before it."""


def is_complete(folder: pathlib.Path) -> bool:
    return all((folder / name).is_file() for name in FILES.values())


def _tmp(path: pathlib.Path) -> pathlib.Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _export_fp32(model_dir: pathlib.Path, out: pathlib.Path) -> None:
    import torch
    from transformers import AutoModel

    class Sentence(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            # Eager attention, not transformers' default SDPA: the SDPA export adds NaN guards
            # (IsNaN/Where) around the softmax that onnxruntime's BERT optimizer cannot match, so
            # version 1's graph kept every attention unfused (~300 nodes, 0 Attention, slower than
            # PyTorch); eager exports the pattern it fuses into 6 Attention + EmbedLayerNormalization.
            self.bert = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager")

        def forward(self, input_ids, attention_mask):
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    model = Sentence().eval()
    ids = torch.ones((2, 16), dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(
            model, (ids, ids), str(out), input_names=["input_ids", "attention_mask"], output_names=["embedding"],
            dynamic_axes={"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
                          "embedding": {0: "batch"}},
            opset_version=OPSET, dynamo=False,
        )


def _optimise(raw: pathlib.Path, out: pathlib.Path, num_heads: int, hidden_size: int) -> None:
    from onnxruntime.transformers.optimizer import optimize_model

    optimised = optimize_model(str(raw), model_type="bert", num_heads=num_heads, hidden_size=hidden_size,
                               opt_level=1, use_gpu=False)
    optimised.save_model_to_file(str(out))


class ScalesMismatchError(RuntimeError):
    """The smoothing scales name nodes the exported graph lacks (or miss some): re-run int8_calibration."""


def _smooth(model, scales: dict) -> None:
    """In place: each target reads its input divided by ``s`` (a Mul) through a weight whose rows are times ``s``.

    Only the target's own input is scaled: the same activation also feeds the residual, which must not change.
    """
    import numpy as np
    from onnx import helper, numpy_helper

    from services.models.int8_smoothing import smoothing_targets

    targets = smoothing_targets(model)
    if {node.name for node, _, _ in targets} != set(scales):
        raise ScalesMismatchError("int8 smoothing scales do not match the exported graph's MatMul/Attention nodes")
    weights = {init.name: init for init in model.graph.initializer}
    smoothing = {}
    for node, activation, weight in targets:
        s = scales[node.name]
        w = numpy_helper.to_array(weights[weight])
        model.graph.initializer.append(numpy_helper.from_array((w * s[:, None]).astype(np.float32), f"{weight}/smoothed"))
        model.graph.initializer.append(numpy_helper.from_array((1.0 / s).astype(np.float32), f"{node.name}/inv_scale"))
        smoothing[id(node)] = helper.make_node("Mul", [activation, f"{node.name}/inv_scale"],
                                               [f"{node.name}/smoothed_input"], name=f"{node.name}/smooth")
        node.input[0], node.input[1] = f"{node.name}/smoothed_input", f"{weight}/smoothed"
    nodes = [n for node in model.graph.node for n in ((smoothing[id(node)], node) if id(node) in smoothing else (node,))]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    used = {name for node in model.graph.node for name in node.input}
    kept = [init for init in model.graph.initializer if init.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)


WEIGHT_TYPES = ("uint8", "int8")
"""``uint8``: the production format (U8U8 kernels, exact on every x86 path); ``int8``: the format before it,
kept for ``bench.embed_bench``'s old-against-new comparison."""


def _quantise(fp32: pathlib.Path, out: pathlib.Path, weight_type: str = "uint8") -> None:
    """8-bit weights (per output channel) for every constant-weight MatMul and the fused attention, smoothed first.

    Scopes measured on the full SciFact corpus (train queries), against PyTorch's dense nDCG@10 of 0.6844:
    unsmoothed, the first feed-forward MatMul alone kept quality (0.6848) at 1.56x PyTorch; both feed-forward
    MatMuls lost 0.0059 and everything (3.7x on a loaded machine) lost 0.009, because a few outlier input
    channels set each activation's one dynamic scale. Smoothed (``int8_calibration``), everything agreed at
    mean cosine 0.9978 on sampled chunks and scored 0.6855 (bench/results/embed-2026-12-04.json) on a VNNI host.
    Those were int8 weights; on AVX2 alone their pair sums saturate (``int8_kernels``), so the weights are uint8:
    the same agreement on every host, at the same speed on AVX2 (bench/results/embed-2026-12-07.json)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from services.models.int8_smoothing import load_scales

    model = onnx.load(str(fp32))
    _smooth(model, load_scales())
    smoothed = out.with_name(out.name + ".smoothed")
    try:
        onnx.save(model, str(smoothed))
        # The fused nodes (com.microsoft domain) defeat ONNX shape inference; their outputs are float.
        quantize_dynamic(str(smoothed), str(out), per_channel=True,
                         weight_type=QuantType.QUInt8 if weight_type == "uint8" else QuantType.QInt8,
                         op_types_to_quantize=["MatMul", "Attention"],
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    finally:
        smoothed.unlink(missing_ok=True)


def ensure_exported_fp32(model_dir: pathlib.Path, cache_root: pathlib.Path, model_name: str, weights_sha256: str,
                         num_heads: int, hidden_size: int) -> pathlib.Path:
    """The export folder, holding the fp32 (optimised) file at least; exports it when missing."""
    folder = export_dir(cache_root, model_name, weights_sha256)
    folder.mkdir(parents=True, exist_ok=True)
    fp32 = folder / FILES["onnx"]
    if not fp32.exists():
        log.info("exporting ONNX model", extra={"fields": {"folder": str(folder)}})
        raw = _tmp(folder / "raw.onnx")
        tmp = _tmp(fp32)
        try:
            _export_fp32(model_dir, raw)
            _optimise(raw, tmp, num_heads, hidden_size)
            os.replace(tmp, fp32)
        finally:
            raw.unlink(missing_ok=True)
            tmp.unlink(missing_ok=True)
    return folder


def ensure_int8_variant(folder: pathlib.Path, weight_type: str) -> pathlib.Path:
    """The int8 file of ``weight_type`` in an export folder holding the fp32 file, quantised when missing: ``uint8``
    is the production file; ``int8`` the format before it (``model-int8-smooth-<digest>.onnx``), for benchmarks."""
    from services.models.int8_smoothing import scales_digest

    if weight_type not in WEIGHT_TYPES:
        raise ValueError(f"weight_type must be one of {WEIGHT_TYPES}")
    path = folder / (FILES["onnx-int8"] if weight_type == "uint8" else f"model-int8-smooth-{scales_digest()}.onnx")
    if not path.exists():
        tmp = _tmp(path)
        try:
            _quantise(folder / FILES["onnx"], tmp, weight_type)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    return path


def ensure_exported(model_dir: pathlib.Path, cache_root: pathlib.Path, model_name: str, weights_sha256: str,
                    num_heads: int, hidden_size: int) -> dict[str, pathlib.Path]:
    """Paths of the ``onnx`` (fp32, optimised) and ``onnx-int8`` files, exporting what is missing."""
    folder = ensure_exported_fp32(model_dir, cache_root, model_name, weights_sha256, num_heads, hidden_size)
    return {"onnx": folder / FILES["onnx"], "onnx-int8": ensure_int8_variant(folder, "uint8")}
