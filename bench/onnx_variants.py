"""Why ONNX fp32 was not faster than PyTorch, and which int8 scope keeps quality (run alone).

Compares, on the same SciFact chunks in one process (rounds interleaved, median round):
PyTorch; the ONNX files of a given export folder (``onnx`` and ``onnx-int8`` of the production
export); and candidate files made from a fused fp32 file by ``onnxruntime.quantization``:
``q_all`` (every MatMul, the fused Attention and the embeddings), ``q_matmul`` (MatMuls only:
feed-forward and attention output), ``q_ffn`` (feed-forward MatMuls only). Reports chunks/s,
ratio to PyTorch, mean/min cosine to PyTorch, and with ``--quality`` SciFact dense nDCG@10 /
Recall@100 (``--quick``: the seeded 200-query / 1200-abstract sample) per variant.

Usage: python -m bench.onnx_variants --fused FILE [--baseline-dir DIR] [--sample 256] [--quality --quick]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import pathlib
import random
import statistics
import tempfile
import time

import psutil

from bench import scifact
from bench.corpus import DiskCachedEncoder
from bench.embed_bench import RESULTS, scifact_chunks
from services.models.embedder import DIMENSION, MODEL_NAME, Embedder, verified_model_path
from services.models.onnx_embedder import OnnxEmbedder


def quantised(fused: pathlib.Path, folder: pathlib.Path) -> dict[str, pathlib.Path]:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    matmuls = [n.name for n in onnx.load(str(fused)).graph.node if n.op_type == "MatMul"]
    common = dict(weight_type=QuantType.QInt8, per_channel=True,
                  extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    scopes = {"q_all": {}, "q_matmul": {"op_types_to_quantize": ["MatMul"]},
              "q_ffn": {"op_types_to_quantize": ["MatMul"], "nodes_to_exclude": [m for m in matmuls if "/attention/" in m]}}
    out = {}
    for name, scope in scopes.items():
        out[name] = folder / f"{name}.onnx"
        quantize_dynamic(str(fused), str(out[name]), **common, **scope)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fused", type=pathlib.Path, required=True, help="a fused fp32 file (production export)")
    parser.add_argument("--baseline-dir", type=pathlib.Path, help="an older export folder to compare with")
    parser.add_argument("--sample", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quality", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sample = random.Random(5).sample(scifact_chunks(), args.sample)
    tokenizer = verified_model_path() / "tokenizer.json"
    with tempfile.TemporaryDirectory() as tmp:
        files = {"fused": args.fused, **quantised(args.fused, pathlib.Path(tmp))}
        if args.baseline_dir:
            files = {"baseline_fp32": args.baseline_dir / "model-fp32.onnx",
                     "baseline_int8": args.baseline_dir / "model-int8.onnx", **files}
        embedders = {"torch": Embedder()} | {
            k: OnnxEmbedder(f, tokenizer, name=MODEL_NAME, dimension=DIMENSION, identity=k, runtime=f"variant-{k}")
            for k, f in files.items()}
        vectors = {k: e.encode(sample) for k, e in embedders.items()}
        times: dict[str, list[float]] = {k: [] for k in embedders}
        for _ in range(args.rounds):
            for k, e in embedders.items():
                started = time.perf_counter()
                e.encode(sample)
                times[k].append(time.perf_counter() - started)
        torch_s = statistics.median(times["torch"])
        result: dict = {"date": dt.date.today().isoformat(), "sample_chunks": len(sample),
                        "load_avg": [round(x, 2) for x in psutil.getloadavg()], "variants": {}}
        for k, t in times.items():
            cos = (vectors[k] * vectors["torch"]).sum(axis=1)
            result["variants"][k] = {"x_torch": round(torch_s / statistics.median(t), 2),
                                     "chunks_per_s": round(len(sample) / statistics.median(t), 1),
                                     "mean_cosine": round(float(cos.mean()), 5), "min_cosine": round(float(cos.min()), 4)}
            if args.quality:
                run = scifact.run(args.quick, encoder=DiskCachedEncoder("scifact", embedder=embedders[k]))
                result["variants"][k] |= {"scifact_dense_ndcg@10": run["methods"]["dense"]["ndcg@10"],
                                          "scifact_dense_recall@100": run["methods"]["dense"]["recall@100"],
                                          "scifact_queries": run["queries"], "scifact_documents": run["documents"]}
            print(k, json.dumps(result["variants"][k]), flush=True)
    path = RESULTS / f"embed-variants-{result['date']}{'-quick' if args.quick else ''}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
