"""Exports the packaged all-MiniLM-L6-v2 weights to ONNX once, cached by the weights' hash.

The graph holds the whole sentence-transformers model: BERT, mean pooling over the attention
mask and L2 normalisation, so ONNX Runtime returns finished embeddings. The fp32 file is then
optimised for BERT (fused attention, layer norm and GELU: onnxruntime.transformers) and the int8
variant is dynamically quantised from it. Files are written under a temporary name and renamed,
so processes exporting at the same time (rag, nlp, orchestrator on a first start) never read a
half-written file; the folder name carries the weights' hash, so new weights mean a new export.
"""

from __future__ import annotations

import logging
import os
import pathlib

log = logging.getLogger("docuthinker.models.onnx")

EXPORT_VERSION = 1
"""Bumped when the exported graph changes, so older cached files are not reused."""
OPSET = 17


def export_dir(cache_root: pathlib.Path, model_name: str, weights_sha256: str) -> pathlib.Path:
    return pathlib.Path(cache_root) / f"{model_name}-{weights_sha256[:16]}-onnx{EXPORT_VERSION}"


def _tmp(path: pathlib.Path) -> pathlib.Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _export_fp32(model_dir: pathlib.Path, out: pathlib.Path) -> None:
    import torch
    from transformers import AutoModel

    class Sentence(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = AutoModel.from_pretrained(str(model_dir))

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
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # The fused nodes (com.microsoft domain) defeat ONNX shape inference; their outputs are float.
    quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def ensure_exported(model_dir: pathlib.Path, cache_root: pathlib.Path, model_name: str, weights_sha256: str,
                    num_heads: int, hidden_size: int) -> dict[str, pathlib.Path]:
    """Paths of the ``onnx`` (fp32, optimised) and ``onnx-int8`` files, exporting what is missing."""
    folder = export_dir(cache_root, model_name, weights_sha256)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"onnx": folder / "model-fp32.onnx", "onnx-int8": folder / "model-int8.onnx"}
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
