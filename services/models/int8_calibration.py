"""Per-channel smoothing scales for the int8 embedder, measured once and committed (``int8_smoothing.json``).

BERT's hidden states carry a few outlier channels (here: 1 to 4 of the 384, up to 30 against a median of
about 2) and the feed-forward GELU output a few more. Dynamic int8 quantises each activation with one scale
per tensor, so those channels set the step for all the others: quantising every MatMul and the fused
attention lost 0.009 SciFact nDCG@10 (bench/results/embed-int8-scope-2026-12-03.json). Dividing an input
channel by ``s`` and multiplying the weight's matching row by ``s`` leaves the product unchanged (in exact
arithmetic) while bringing the outliers down to the other channels' range before the activation is
quantised; ``s = max(1, amax / median(amax))`` over the channels' calibrated maxima. SmoothQuant's
``amax**a / wmax**(1-a)`` was tried first and did worse here, because the weights are quantised per output
column: raising whole rows coarsens every column they cross.

The scales are measured from texts that are not in any evaluation set the benchmarks score (SQuAD 2.0 dev
contexts, seeded sample) and written to a file in the repository, so every machine's export is the same
function of the weights and that file, and nothing at setup needs the calibration texts. Re-measure with
``python -m services.models.int8_calibration --squad ../shared/data/squad/dev.json.gz`` (a new file changes
the int8 identity: indexes re-embed through the re-index path).
"""

from __future__ import annotations

import argparse
import gzip
import json
import pathlib
import random
from collections.abc import Iterable

import numpy as np

from services.models.int8_smoothing import SCALES_FILE, scales_digest, smoothing_targets
from services.models.onnx_export import FILES, ensure_exported_fp32
from services.models.weights import DIMENSION, MODEL_NAME, NUM_HEADS, WEIGHTS_SHA256, verified_model_path

CALIBRATION_TEXTS = 300
SEED = 1


def activation_maxima(fp32_file: pathlib.Path, tokenizer_file: pathlib.Path, texts: Iterable[str],
                      max_tokens: int) -> dict[str, np.ndarray]:
    """max |x| per input channel of every target, over every token of ``texts`` (one text per pass: no padding)."""
    import onnx
    import onnxruntime as ort
    from onnx import helper
    from tokenizers import Tokenizer

    model = onnx.load(str(fp32_file))
    targets = smoothing_targets(model)
    activations = sorted({activation for _, activation, _ in targets})
    for name in activations:
        model.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_tokens)
    maxima: dict[str, np.ndarray] = {}
    for text in texts:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        for name, value in zip(activations, session.run(activations, {"input_ids": ids, "attention_mask": np.ones_like(ids)})):
            channel_max = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
            maxima[name] = np.maximum(maxima[name], channel_max) if name in maxima else channel_max
    return {node.name: maxima[activation] for node, activation, _ in targets}


def scales_from(maxima: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: np.maximum(1.0, amax / np.median(amax)).astype(np.float32) for name, amax in maxima.items()}


def squad_contexts(path: pathlib.Path, count: int = CALIBRATION_TEXTS, seed: int = SEED) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    contexts = [p["context"] for article in data["data"] for p in article["paragraphs"]]
    return random.Random(seed).sample(contexts, count)


def main() -> None:
    from services.models.onnx_embedder import MAX_TOKENS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--squad", type=pathlib.Path, required=True, help="SQuAD 2.0 dev.json.gz")
    parser.add_argument("--out", type=pathlib.Path, default=SCALES_FILE)
    args = parser.parse_args()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        folder = ensure_exported_fp32(verified_model_path(), pathlib.Path(tmp), MODEL_NAME, WEIGHTS_SHA256,
                                      NUM_HEADS, DIMENSION)
        maxima = activation_maxima(folder / FILES["onnx"], verified_model_path() / "tokenizer.json",
                                   squad_contexts(args.squad), MAX_TOKENS)
    scales = scales_from(maxima)
    payload = {
        "made_by": "python -m services.models.int8_calibration (see its docstring)",
        "calibration": f"{CALIBRATION_TEXTS} SQuAD 2.0 dev contexts (random.Random({SEED}).sample), one pass each",
        "rule": "s = max(1, amax / median(amax)) per input channel of each target",
        "scales": {name: [round(float(v), 3) for v in s] for name, s in scales.items()},
    }
    args.out.write_text(json.dumps(payload, separators=(",", ":")) + "\n")
    raised = sum(int((s > 1).sum()) for s in scales.values())
    print(f"{len(scales)} targets, {raised} channels scaled, written to {args.out} ({scales_digest(args.out)})")


if __name__ == "__main__":
    main()
