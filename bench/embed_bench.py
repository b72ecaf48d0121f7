"""Embedding runtimes side by side (``make bench-embed``): PyTorch vs ONNX Runtime fp32 vs int8.

``onnx-int8`` is the production int8 file (uint8 weights, exact on every x86 CPU); ``onnx-int8-s8`` the
format before it (int8 weights, whose pair sums saturate on AVX2 without VNNI: issue #44), run for the
old-against-new comparison and never eligible as the default. The CPU's int8 path is in ``cpu``.

One process, one run, so the three see the same (shared, noisy) machine: rounds alternate the
runtimes over the same SciFact chunks and each reports its median round; ratios to PyTorch are
the figures to read, absolute rates move with the machine's other load.

- throughput: chunks/s encoding the same chunks (production chunker, batch size of the setting);
- tuning: ONNX batch size x (concurrent one-thread streams vs one pass over every core), and
  length-sorted vs arrival-order batches;
- agreement: mean / min cosine of each ONNX variant to PyTorch over every SciFact chunk indexed;
- quality: SciFact nDCG@10 / Recall@100 (train queries, full corpus; ``--quick``: the seeded
  200-query / 1200-abstract sample; dense and the default fusion) and SQuAD evidence@5 (the
  quick question sample; 100 questions with ``--quick``) with each runtime's vectors;
- choice: the fastest variant within 0.005 dense nDCG@10 of PyTorch with mean cosine >= 0.99,
  else fp32 ONNX (the rule of issue #20); this is the default of DOCUTHINKER_EMBED_RUNTIME.

Usage: python -m bench.embed_bench [--quick] [--skip-quality]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import pathlib
import random
import statistics
import time

import numpy as np
import psutil

from bench import scifact, squad
from bench.corpus import DiskCachedEncoder
from services.models.cpu_features import cpu_features
from services.models.embedder import (
    MODEL_NAME,
    NUM_HEADS,
    WEIGHTS_SHA256,
    build_embedder,
    identity,
    verified_model_path,
)
from services.models.settings import batch_size_for, embedder_settings
from services.rag.documents import Section
from services.rag.ingest.chunking import ChunkerConfig, chunk_sections
from services.rag.settings import RagSettings

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
RUNTIMES = ("torch", "onnx", "onnx-int8", "onnx-int8-s8")
LEGACY = "onnx-int8-s8"
"""The int8-weight file of before issue #44: measured, never chosen."""


def build(name: str):
    """The embedder of one benchmarked variant (the legacy one from the same export folder)."""
    if name != LEGACY:
        return build_embedder(runtime=name)
    from services.models.embedder import DIMENSION, onnx_cache_dir
    from services.models.onnx_embedder import OnnxEmbedder
    from services.models.onnx_export import ensure_exported, ensure_int8_variant, export_dir

    settings = embedder_settings()
    model_dir = verified_model_path()
    ensure_exported(model_dir, onnx_cache_dir(settings), MODEL_NAME, WEIGHTS_SHA256, NUM_HEADS, DIMENSION)
    path = ensure_int8_variant(export_dir(onnx_cache_dir(settings), MODEL_NAME, WEIGHTS_SHA256), "int8")
    # Its vectors depend on the CPU's int8 path: the bench cache keeps them apart by it.
    legacy_identity = identity("onnx-int8").replace("/int8u8-", "/int8-") + f"@{cpu_features().int8_path}"
    return OnnxEmbedder(path, model_dir / "tokenizer.json", name=MODEL_NAME, dimension=DIMENSION,
                        identity=legacy_identity, runtime="onnx-int8",
                        batch_size=batch_size_for(settings, "onnx-int8"), threads=settings.threads,
                        streams=settings.streams)


def _chunks_of(texts) -> list[str]:
    settings = RagSettings()
    config = ChunkerConfig(settings.chunk_size, settings.chunk_overlap)
    chunks = []
    for text in texts:
        chunks += [text[s.start : s.end] for s in chunk_sections([Section(text=text)], config)]
    return chunks


def scifact_chunks() -> list[str]:
    corpus, _, _ = scifact.load()
    return _chunks_of(corpus.values())


def rate(embedder, texts: list[str], batch_size: int | None, sort: bool = True) -> float:
    batch_size = batch_size or embedder.batch_size
    started = time.perf_counter()
    if sort:
        embedder.encode(texts, batch_size)
    else:  # arrival order: each batch is padded to its own longest text
        for start in range(0, len(texts), batch_size):
            embedder.encode(texts[start : start + batch_size], batch_size)
    return len(texts) / (time.perf_counter() - started)


def throughput(embedders: dict, texts: list[str], rounds: int, batch_size: int | None) -> dict:
    """``batch_size`` None: each runtime's own (its measured best unless DOCUTHINKER_EMBED_BATCH_SIZE is set)."""
    rates: dict[str, list[float]] = {name: [] for name in embedders}
    for embedder in embedders.values():  # warm-up: first calls allocate
        embedder.encode(texts[:64], batch_size)
    for _ in range(rounds):
        for name, embedder in embedders.items():
            rates[name].append(rate(embedder, texts, batch_size))
    torch_rate = statistics.median(rates["torch"])
    return {name: {"chunks_per_s": round(statistics.median(r), 1), "rounds": [round(x, 1) for x in r],
                   "x_torch": round(statistics.median(r) / torch_rate, 2)} for name, r in rates.items()}


def tuning(runtime: str, texts: list[str], quick: bool) -> dict:
    """Concurrent one-thread streams vs one pass over every core, per batch size (one call of ``texts``)."""
    out = {}
    cores = psutil.cpu_count() or 1
    for threads, streams in dict.fromkeys([(1, cores), (cores, 1), (1, 1)]):
        settings = embedder_settings().model_copy(update={"threads": threads, "streams": streams})
        embedder = build_embedder(runtime=runtime, settings=settings)
        embedder.encode(texts[:32])
        for batch_size in (2, 32) if quick else (2, 4, 16, 32):
            out[f"streams={streams},threads={threads},batch={batch_size}"] = round(rate(embedder, texts, batch_size), 1)
        out[f"streams={streams},threads={threads},batch=32,arrival-order"] = round(
            rate(embedder, texts, 32, sort=False), 1)
    return out


def agreement(vectors: dict[str, np.ndarray]) -> dict:
    out = {}
    for name in RUNTIMES[1:]:
        cos = (vectors["torch"] * vectors[name]).sum(1)
        out[name] = {"mean_cosine": round(float(cos.mean()), 5), "min_cosine": round(float(cos.min()), 5)}
    return out


def quality(embedders: dict, quick: bool, with_squad: bool) -> dict:
    out = {}
    squad.QUICK_QUESTIONS = 100 if quick else squad.QUICK_QUESTIONS
    for name, embedder in embedders.items():
        started = time.perf_counter()
        sci = scifact.run(quick, encoder=DiskCachedEncoder("scifact", embedder=embedder))
        sq = (squad.run(True, encoder=DiskCachedEncoder("squad", embedder=embedder)) if with_squad
              else {"evidence@5": None, "f1": None, "questions": 0})
        out[name] = {
            "scifact_dense_ndcg@10": sci["methods"]["dense"]["ndcg@10"],
            "scifact_dense_recall@100": sci["methods"]["dense"]["recall@100"],
            "scifact_default_ndcg@10": sci["methods"][sci["default_fusion"].lower().replace("dense_only", "dense")
                                                      .replace("keyword_only", "bm25")]["ndcg@10"],
            "scifact_default_recall@100": sci["methods"][sci["default_fusion"].lower().replace("dense_only", "dense")
                                                         .replace("keyword_only", "bm25")]["recall@100"],
            "scifact_queries": sci["queries"], "scifact_documents": sci["documents"],
            "squad_evidence@5": sq["evidence@5"], "squad_f1": sq["f1"], "squad_questions": sq["questions"],
            "seconds": round(time.perf_counter() - started, 1),
        }
    return out


def choose(speed: dict, agree: dict, qual: dict | None) -> tuple[str, list[str]]:
    reasons = []
    eligible = []
    for name in RUNTIMES[1:]:
        ok_cos = agree[name]["mean_cosine"] >= 0.99
        ok_q = qual is None or qual[name]["scifact_dense_ndcg@10"] >= qual["torch"]["scifact_dense_ndcg@10"] - 0.005
        reasons.append(f"{name}: mean cosine {agree[name]['mean_cosine']} ({'ok' if ok_cos else 'too low'}), "
                       f"nDCG@10 {'within' if ok_q else 'not within'} 0.005 of torch, "
                       f"{speed[name]['x_torch']}x torch")
        if ok_cos and ok_q and name != LEGACY:
            eligible.append(name)
    if not eligible:
        return "onnx", reasons
    return max(eligible, key=lambda n: speed[n]["chunks_per_s"]), reasons


def run(quick: bool, skip_quality: bool, sample_size: int, rounds: int, with_squad: bool) -> dict:
    started = time.perf_counter()
    chunks = scifact_chunks()
    rss = {"before_models_mib": round(psutil.Process().memory_info().rss / 2**20)}
    embedders = {}
    for name in RUNTIMES:
        embedders[name] = build(name)
        rss[f"after_{name}_mib"] = round(psutil.Process().memory_info().rss / 2**20)
    sample = random.Random(5).sample(chunks, sample_size)
    if quick:  # the quick SciFact sample's chunks: the quality runs embed (and cache) them per runtime
        corpus, queries, qrels = scifact.load()
        texts, _ = scifact.sample(corpus, queries, qrels, True)
        chunks = _chunks_of(texts.values())
    result: dict = {"date": dt.date.today().isoformat(), "variant": "quick" if quick else "full",
                    "cpu": cpu_features().as_dict(),
                    "cpu_count": psutil.cpu_count(), "load_avg_at_start": [round(x, 2) for x in psutil.getloadavg()],
                    "chunks_total": len(chunks), "throughput_sample_chunks": len(sample),
                    "batch_size": {name: e.batch_size for name, e in embedders.items()},
                    "onnx_threads": embedders["onnx"].threads, "onnx_streams": embedders["onnx"].streams}
    result["throughput"] = throughput(embedders, sample, rounds, None)
    result["tuning"] = {name: tuning(name, sample[:256], quick) for name in ("onnx", "onnx-int8")}
    result["quality"] = None if skip_quality else quality(embedders, quick, with_squad)
    agree_texts = chunks if not skip_quality else sample
    vectors = {name: DiskCachedEncoder("scifact", embedder=e).encode(agree_texts) for name, e in embedders.items()}
    result["agreement"] = agreement(vectors) | {"chunks": len(agree_texts)}
    result["default"], result["choice_reasons"] = choose(result["throughput"], result["agreement"], result["quality"])
    result["rss"] = rss
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-squad", action="store_true")
    parser.add_argument("--sample", type=int, default=768, help="chunks timed per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quality-queries", type=int, default=scifact.QUICK_QUERIES, help="--quick SciFact sample")
    parser.add_argument("--quality-docs", type=int, default=scifact.QUICK_DOCS)
    args = parser.parse_args()
    scifact.QUICK_QUERIES, scifact.QUICK_DOCS = args.quality_queries, args.quality_docs
    result = run(args.quick, args.skip_quality, args.sample, args.rounds, not args.skip_squad)
    result["args"] = vars(args)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"embed-{result['date']}{'-quick' if args.quick else ''}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("throughput", "agreement", "quality", "default", "choice_reasons")},
                     indent=2))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
