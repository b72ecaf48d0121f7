"""Exports the packaged all-MiniLM-L6-v2 weights to ONNX once, cached by the weights' hash.

The graph holds the whole sentence-transformers model: BERT, mean pooling over the attention
mask and L2 normalisation, so ONNX Runtime returns finished embeddings. The fp32 file is then
optimised for BERT (fused attention, embedding and skip layer norms, GELU: onnxruntime.transformers)
and the int8 variant is dynamically quantised from it (the feed-forward layers' first MatMul only,
``_quantise``). Files are written under a temporary name and renamed,
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


FILES = {"onnx": "model-fp32.onnx", "onnx-int8": "model-int8-intermediate.onnx"}
"""The int8 file's name says its scope: ``model-int8.onnx`` (both feed-forward MatMuls) came before it."""


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


def _quantise(fp32: pathlib.Path, out: pathlib.Path) -> None:
    """int8 weights for the first feed-forward MatMul of each layer only (``intermediate.dense``, 384 -> 1536).

    Scopes measured on the full SciFact corpus (train queries), against fp32's dense nDCG@10 of 0.6844 with
    the same chunks: both feed-forward MatMuls ran 1.86x PyTorch at mean cosine 0.9956 but lost 0.0059
    nDCG@10 (outside the 0.005 bound); keeping layer 5 in fp32 lost 0.0082, so the loss is not one layer's.
    The second MatMul (``output.dense``) reads the GELU's output, whose outliers a per-tensor dynamic
    activation scale resolves badly; without it the file runs 1.52x PyTorch (fp32: 1.28x) at mean cosine
    0.9988 and nDCG@10 0.6848. Quantising everything ran 3.7x but agreed at cosine 0.994 and lost 0.009
    (bench/results/embed-int8-scope-2026-12-03.json)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(fp32), load_external_data=False)
    kept = [n.name for n in model.graph.node if n.op_type == "MatMul" and "/intermediate/" not in n.name]
    # The fused nodes (com.microsoft domain) defeat ONNX shape inference; their outputs are float.
    quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul"], nodes_to_exclude=kept,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def ensure_exported(model_dir: pathlib.Path, cache_root: pathlib.Path, model_name: str, weights_sha256: str,
                    num_heads: int, hidden_size: int) -> dict[str, pathlib.Path]:
    """Paths of the ``onnx`` (fp32, optimised) and ``onnx-int8`` files, exporting what is missing."""
    folder = export_dir(cache_root, model_name, weights_sha256)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {runtime: folder / name for runtime, name in FILES.items()}
    if not paths["onnx"].exists():
        log.info("exporting ONNX model", extra={"fields": {"folder": str(folder)}})
        raw = _tmp(folder / "raw.onnx")
        tmp = _tmp(paths["onnx"])
        try:
            _export_fp32(model_dir, raw)
            _optimise(raw, tmp, num_heads, hidden_size)
            os.replace(tmp, paths["onnx"])
        finally:
            raw.unlink(missing_ok=True)
            tmp.unlink(missing_ok=True)
    if not paths["onnx-int8"].exists():
        tmp = _tmp(paths["onnx-int8"])
        try:
            _quantise(paths["onnx"], tmp)
            os.replace(tmp, paths["onnx-int8"])
        finally:
            tmp.unlink(missing_ok=True)
    return paths
