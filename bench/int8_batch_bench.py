"""int8 ONNX at one text per pass against two (``python -m bench.int8_batch_bench``): the quality side.

The int8 graph quantises its activations with one scale per forward pass, so a text's vector depends on
whatever shares its pass. Batch 1 (the default since 2026-12-06, services/models/settings.py) makes it
depend on the text alone; this measures what that does to retrieval: SciFact nDCG@10 / Recall@100 (train
queries, full corpus; dense and every fusion) and SQuAD evidence@5 (the quick question sample) at each
batch size, and the mean / min cosine of each to PyTorch and to each other on a seeded chunk sample. The
speed side is in bench/ingest_seed_bench.py (through Envoy) and the settings' docstring.

Usage: python -m bench.int8_batch_bench [--batch-sizes 1,2] [--sample 1500]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import pathlib
import random
import tempfile
import time

from bench import scifact, squad
from bench.corpus import DiskCachedEncoder
from bench.embed_bench import scifact_chunks
from services.models.embedder import build_embedder
from services.models.settings import EmbedderSettings

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def quality(batch_size: int, cache: pathlib.Path) -> dict:
    embedder = build_embedder(EmbedderSettings(batch_size=batch_size), runtime="onnx-int8")
    started = time.perf_counter()
    # Vectors cached per batch size, in this run's own folder: the sizes' vectors differ, by design here.
    sci = scifact.run(False, encoder=DiskCachedEncoder(path=cache / f"scifact-b{batch_size}.npz", embedder=embedder))
    sq = squad.run(True, encoder=DiskCachedEncoder(path=cache / f"squad-b{batch_size}.npz", embedder=embedder))
    return {"scifact_ndcg@10": {name: m["ndcg@10"] for name, m in sci["methods"].items()},
            "scifact_recall@100": {name: m["recall@100"] for name, m in sci["methods"].items()},
            "scifact_default_fusion": sci["default_fusion"], "scifact_queries": sci["queries"],
            "scifact_documents": sci["documents"], "squad_evidence@5": sq["evidence@5"],
            "squad_questions": sq["questions"], "seconds": round(time.perf_counter() - started, 1)}


def agreement(batch_sizes: list[int], sample: int) -> dict:
    chunks = random.Random(5).sample(scifact_chunks(), sample)
    vectors = {"torch": build_embedder(runtime="torch").encode(chunks)}
    for size in batch_sizes:
        vectors[f"int8-b{size}"] = build_embedder(EmbedderSettings(batch_size=size), runtime="onnx-int8").encode(chunks)
    names = list(vectors)
    out = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            cos = (vectors[a] * vectors[b]).sum(axis=1)
            out[f"{a}~{b}"] = {"mean_cosine": round(float(cos.mean()), 5), "min_cosine": round(float(cos.min()), 5)}
    return out | {"chunks": sample}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", default="1,2")
    parser.add_argument("--sample", type=int, default=1500, help="chunks compared for agreement")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    sizes = [int(s) for s in args.batch_sizes.split(",")]
    result: dict = {"benchmark": "int8-batch", "date": dt.date.today().isoformat()}
    with tempfile.TemporaryDirectory(prefix="docuthinker-int8-batch-") as cache:
        result["quality"] = {str(size): quality(size, pathlib.Path(cache)) for size in sizes}
    result["agreement"] = agreement(sizes, args.sample)
    out = args.out or RESULTS / f"int8-batch-{result['date']}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"[int8-batch] wrote {out}")


if __name__ == "__main__":
    main()
