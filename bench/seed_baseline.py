"""DocuThinker's default against the seeds' own pipeline (``bench.seed_pipeline``), same data, one run.

Ingestion throughput: the same seeded sample of SciFact abstracts (one document each, as
plain text) ingested one document at a time by
- DocuThinker: the production ``IngestionPipeline`` of a ``RagRuntime`` in this process
  (validate, store original, parse, chunk, embed, vector log + FAISS, SQLite publish), plus the
  BM25 build at the end (ingestion is not done before the keyword index is);
- the seed: LangChain split, embed, Chroma add;
both with the same model instance (real MiniLM inference, no cache): DocuThinker through its
``Embedder``, the seed through ``SentenceTransformer.encode`` in batches of 32 directly, as
Chroma's sentence-transformers embedding function calls it; alternating which
goes first over ``repeats`` rounds, each round in fresh directories. Reported per side as
docs/s and chunks/s (median and spread over rounds) and as paired ratios (DocuThinker/seed).
docs/s is the fair comparison: the two chunkers cut different numbers of chunks.

Retrieval quality: nDCG@10 on SciFact train queries (quick: the same seeded sample as the
quality benchmark under ``make bench-quick``; full: the whole corpus and every judged query). DocuThinker:
production chunker and stores (``bench.corpus.BenchCorpus``) with the default hybrid
retrieval; the seed: its pipeline above, dense top-k. Both rank a document by its best chunk
among the top 2k chunks. Vectors come from the disk cache of the same model (identical
values; it only spares re-embedding on later runs).

    python -m bench.seed_baseline [--quick] [--out PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import functools
import json
import pathlib
import random
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from bench import scifact
from bench.corpus import BenchCorpus, DiskCachedEncoder
from bench.environment import describe as environment
from bench.metrics import mean, ndcg_at_k
from bench.seed_pipeline import CHUNK_OVERLAP, CHUNK_SIZE, SeedPipeline, seed_encode
from bench.stats import spread
from bench.suite import QUICK_SCIFACT_DOCS, QUICK_SCIFACT_QUERIES

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
TENANT = "seed-baseline"
T = TypeVar("T")


@dataclass(frozen=True)
class SeedPlan:
    throughput_docs: int
    repeats: int
    quality_queries: int | None
    """None: every judged train query over the whole corpus."""
    quality_docs: int | None


QUICK = SeedPlan(throughput_docs=100, repeats=3, quality_queries=QUICK_SCIFACT_QUERIES,
                 quality_docs=QUICK_SCIFACT_DOCS)
FULL = SeedPlan(throughput_docs=300, repeats=3, quality_queries=None, quality_docs=None)


# -- ingestion throughput -------------------------------------------------------------
async def docuthinker_ingest(docs: list[tuple[str, str]], root: pathlib.Path) -> dict:
    from services.models.embedder import get_embedder
    from services.rag.documents import IngestOutcome
    from services.rag.runtime import RagRuntime
    from services.rag.settings import RagSettings
    from services.runtime.config import MeshSettings
    from services.storage.settings import StorageSettings

    runtime = await asyncio.to_thread(functools.partial(
        RagRuntime.open, root, RagSettings(), MeshSettings().max_upload_bytes, get_embedder(),
        storage=StorageSettings(store_backend="embedded")))
    try:
        chunks = 0
        started = time.perf_counter()
        for key, text in docs:
            async for event in runtime.pipeline.upload(TENANT, f"{key}.txt", "text/plain", text.encode()):
                if isinstance(event, IngestOutcome):
                    chunks += event.document.chunk_count
        await asyncio.to_thread(runtime.keyword.refresh, TENANT)
        seconds = time.perf_counter() - started
    finally:
        await runtime.close()
    return _rates(len(docs), chunks, seconds)


def seed_ingest(docs: list[tuple[str, str]], root: pathlib.Path) -> dict:
    pipeline = SeedPipeline(root, seed_encode())
    started = time.perf_counter()
    chunks = in_worker_thread(lambda: sum(pipeline.ingest(key, text) for key, text in docs))
    return _rates(len(docs), chunks, time.perf_counter() - started)


def in_worker_thread(work: Callable[[], T]) -> T:
    """Runs ``work`` in a worker thread, where DocuThinker's pipeline runs its encode calls too.

    Before DocuThinker processes set OMP_WAIT_POLICY=PASSIVE (``services/__init__.py``), encode
    from the main thread ran about 2x slower here, and 7x when interleaved with Chroma writes;
    both sides still run the same way, so the comparison is between pipelines only.
    """
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(work).result()


def _rates(documents: int, chunks: int, seconds: float) -> dict:
    return {"documents": documents, "chunks": chunks, "seconds": round(seconds, 3),
            "docs_per_s": round(documents / seconds, 3), "chunks_per_s": round(chunks / seconds, 3)}


def throughput(corpus: dict[str, str], plan: SeedPlan, seed: int = 5) -> dict:
    from services.models.embedder import get_embedder

    keys = random.Random(seed).sample(sorted(corpus), plan.throughput_docs)
    docs = [(k, corpus[k]) for k in keys]
    get_embedder().encode([text for _, text in docs[:4]])  # load and warm the models outside the timings
    seed_encode()([text for _, text in docs[:4]])
    rounds: dict[str, list[dict]] = {"docuthinker": [], "seed": []}
    for r in range(plan.repeats):
        order = ("docuthinker", "seed") if r % 2 == 0 else ("seed", "docuthinker")
        for side in order:
            with tempfile.TemporaryDirectory(prefix=f"seed-baseline-{side}-") as tmp:
                if side == "docuthinker":
                    rounds[side].append(asyncio.run(docuthinker_ingest(docs, pathlib.Path(tmp))))
                else:
                    rounds[side].append(seed_ingest(docs, pathlib.Path(tmp)))
            print(f"[seed-baseline] round {r + 1} {side}: {rounds[side][-1]}", flush=True)
    out: dict = {"documents": len(docs), "repeats": plan.repeats, "rounds": rounds}
    for side, results in rounds.items():
        out[side] = {metric: spread([x[metric] for x in results]) for metric in ("docs_per_s", "chunks_per_s")}
        out[side]["chunks"] = results[0]["chunks"]
    for metric in ("docs_per_s", "chunks_per_s"):
        paired = [d[metric] / s[metric] for d, s in zip(rounds["docuthinker"], rounds["seed"], strict=True)]
        out[f"ratio_{metric}"] = spread(paired)
    return out


# -- retrieval quality ----------------------------------------------------------------
def quality_sample(corpus, queries, qrels, plan: SeedPlan, seed: int = 13):
    """``bench.scifact.sample``'s rule with explicit sizes: same seed and sizes, same documents."""
    if plan.quality_queries is None:
        return corpus, queries
    rng = random.Random(seed)
    chosen = dict(rng.sample(sorted(queries.items()), min(plan.quality_queries, len(queries))))
    keep = {d for q in chosen for d in qrels[q] if d in corpus}
    others = sorted(set(corpus) - keep)
    keep |= set(rng.sample(others, max(0, min(len(others), (plan.quality_docs or 0) - len(keep)))))
    return {d: corpus[d] for d in sorted(keep)}, chosen


def quality(corpus: dict[str, str], queries: dict[str, str], qrels) -> dict:
    from services.rag.answers.settings import AnswerSettings
    from services.rag.retrieval import HybridRetriever

    encoder = DiskCachedEncoder("scifact")
    query_vectors = dict(zip(queries, encoder.encode(list(queries.values())), strict=True))
    bench = BenchCorpus(encoder)
    try:
        in_worker_thread(lambda: bench.add(corpus.items()))
        retriever = HybridRetriever(bench.index, encoder, AnswerSettings().retrieval_config())
        fusion = retriever.config.default_fusion
        started = time.perf_counter()
        ours = in_worker_thread(lambda: [
            ndcg_at_k(scifact.ranked_documents(retriever, bench, text, 10, fusion), qrels[qid], 10)
            for qid, text in queries.items()])
        ours_ms = 1000 * (time.perf_counter() - started) / len(queries)
        docuthinker = {"ndcg@10": round(mean(ours), 4), "chunks": bench.chunk_count, "fusion": fusion.name,
                       "ms_per_query": round(ours_ms, 2)}
    finally:
        bench.close()
    with tempfile.TemporaryDirectory(prefix="seed-baseline-quality-") as tmp:
        seed = SeedPipeline(pathlib.Path(tmp), encoder.encode)
        in_worker_thread(lambda: [seed.ingest(key, text) for key, text in corpus.items()])
        started = time.perf_counter()
        theirs = in_worker_thread(lambda: [ndcg_at_k(seed.ranked_documents(query_vectors[qid], 10), qrels[qid], 10)
                                           for qid in queries])
        seed_ms = 1000 * (time.perf_counter() - started) / len(queries)
        baseline = {"ndcg@10": round(mean(theirs), 4), "chunks": seed.chunks, "retrieval": "dense top-k (Chroma)",
                    "ms_per_query": round(seed_ms, 2)}
    encoder.save()
    wins = sum(1 for a, b in zip(ours, theirs, strict=True) if a > b)
    losses = sum(1 for a, b in zip(ours, theirs, strict=True) if a < b)
    return {"queries": len(queries), "documents": len(corpus), "docuthinker": docuthinker, "seed": baseline,
            "ndcg@10_difference": round(docuthinker["ndcg@10"] - baseline["ndcg@10"], 4),
            "ndcg@10_ratio": round(docuthinker["ndcg@10"] / baseline["ndcg@10"], 4) if baseline["ndcg@10"] else None,
            "queries_better": wins, "queries_worse": losses}


def run(quick: bool) -> dict:
    from services.models.embedder import get_embedder

    plan = QUICK if quick else FULL
    started = time.perf_counter()
    corpus, queries, qrels = scifact.load()
    speed = throughput(corpus, plan)
    sample_corpus, sample_queries = quality_sample(corpus, queries, qrels, plan)
    retrieval = quality(sample_corpus, sample_queries, qrels)
    return {
        "benchmark": "seed-baseline",
        "variant": "quick" if quick else "full",
        "date": dt.date.today().isoformat(),
        "environment": environment(embedder_device=get_embedder().device),
        "seed_config": {"splitter": "langchain_text_splitters.RecursiveCharacterTextSplitter",
                        "chunk_size": CHUNK_SIZE, "chunk_overlap": CHUNK_OVERLAP, "index": "chromadb PersistentClient",
                        "retrieval": "dense top-k"},
        "throughput": speed,
        "quality": retrieval,
        "goals": {
            "docuthinker ingests faster than the seed (docs/s, median paired ratio > 1)":
                speed["ratio_docs_per_s"]["median"] > 1.0,
            "docuthinker nDCG@10 > seed nDCG@10": retrieval["ndcg@10_difference"] > 0,
        },
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args(argv)
    result = run(args.quick)
    out = args.out or RESULTS / f"seed-baseline-{result['date']}{'-quick' if args.quick else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("throughput", "quality", "goals")}, indent=1))
    print(f"[seed-baseline] wrote {out}")


if __name__ == "__main__":
    main()
