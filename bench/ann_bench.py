"""Approximate search for large tenants (``make bench-ann``): HNSW parameters by measurement.

Synthetic vectors (said so in the result): 384-d, L2-normalised, 2,000 clusters in a 48-d
subspace plus noise, so that neighbourhoods exist as in real embeddings; queries are perturbed copies of
stored vectors. Ground truth is the exact inner-product top 10 (FAISS flat). For each size the
production ``HnswIndex`` (fp16 storage) is built incrementally in document-sized adds for each
M, then efSearch is swept: recall@10 against exact, single-thread p50/p95 per query, build
time, resident memory added by the index, snapshot write and reload (no rebuild) times. The
exact index's latency at the same size is the baseline. The choice: the fastest setting with
recall@10 >= 0.99, which the RagSettings defaults follow.

Usage: python -m bench.ann_bench [--sizes 100000,1000000] [--m 16,32]
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import pathlib
import statistics
import tempfile
import time

import faiss
import numpy as np
import psutil

from services.rag.store.ann import ExactIndex, HnswIndex, HnswParams

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
DIM = 384
EF_SEARCH = (32, 64, 96, 128, 192)


LATENT = 48



def snapshot_timing(index: HnswIndex, dim: int, params: HnswParams) -> dict:
    """Seconds to write and reload the index's snapshot, and its size."""
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "snapshot.npz"
        started = time.perf_counter()
        index.save(path)
        written = {"snapshot_write_s": round(time.perf_counter() - started, 2),
                   "snapshot_mib": round(path.stat().st_size / 2**20)}
        started = time.perf_counter()
        HnswIndex.load(path, dim, params)
        return written | {"snapshot_reload_s": round(time.perf_counter() - started, 2)}

def synthetic(n: int, seed: int = 3) -> np.ndarray:
    """Clusters in a 48-d subspace mapped into 384-d, plus noise: sentence embeddings have a low
    intrinsic dimension, and i.i.d. 384-d noise (no neighbourhoods at all) is not what HNSW meets."""
    rng = np.random.default_rng(seed)
    projection = rng.normal(size=(LATENT, DIM)).astype(np.float32)
    centres = rng.normal(size=(2000, LATENT)).astype(np.float32)
    out = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, 100_000):
        stop = min(n, start + 100_000)
        z = centres[rng.integers(0, len(centres), stop - start)] + 0.5 * rng.normal(size=(stop - start, LATENT))
        v = z @ projection + 0.3 * rng.normal(size=(stop - start, DIM))
        out[start:stop] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def queries_for(vectors: np.ndarray, count: int, seed: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q = vectors[rng.integers(0, len(vectors), count)] + 0.05 * rng.normal(size=(count, DIM))
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def latencies(index, queries: np.ndarray, truth: np.ndarray | None = None) -> dict:
    times, found = [], []
    for q in queries:
        started = time.perf_counter()
        _, keys = index.search(q.reshape(1, -1), 10, None)
        times.append((time.perf_counter() - started) * 1000)
        found.append(keys[0])
    out = {"p50_ms": round(statistics.median(times), 3), "p95_ms": round(float(np.percentile(times, 95)), 3)}
    if truth is not None:
        hits = [len(set(f.tolist()) & set(t.tolist())) for f, t in zip(found, truth, strict=True)]
        out["recall@10"] = round(sum(hits) / (10 * len(truth)), 4)
    return out


def rss_mib() -> float:
    gc.collect()
    return psutil.Process().memory_info().rss / 2**20


def one_size(n: int, ms: list[int], query_count: int) -> dict:
    vectors = synthetic(n)
    keys = np.arange(n, dtype=np.int64)
    queries = queries_for(vectors, query_count)
    base = rss_mib()
    exact = ExactIndex(DIM)
    exact.add(keys, vectors)
    exact_rss = rss_mib() - base
    _, truth = exact.search(queries, 10, None)
    result = {"vectors": n, "synthetic": True, "queries": query_count,
              "exact": latencies(exact, queries) | {"index_rss_mib": round(exact_rss)}}
    del exact
    gc.collect()
    for m in ms:
        before = rss_mib()
        index = HnswIndex(DIM, HnswParams(m=m, ef_construction=80, ef_search=EF_SEARCH[0]))
        started = time.perf_counter()
        for start in range(0, n, 5000):  # incremental, as documents arrive
            index.add(keys[start : start + 5000], vectors[start : start + 5000])
        build_s = time.perf_counter() - started
        entry = {"build_s": round(build_s, 1), "index_rss_mib": round(rss_mib() - before), "ef_search": {}}
        for ef in EF_SEARCH:
            index.params = HnswParams(m=m, ef_construction=80, ef_search=ef)
            entry["ef_search"][ef] = latencies(index, queries, truth)
        entry |= snapshot_timing(index, DIM, index.params)
        result[f"hnsw_m{m}"] = entry
        del index
        gc.collect()
    return result


def choose(result: dict) -> dict | None:
    best = None
    for name, entry in result.items():
        if not name.startswith("hnsw_m"):
            continue
        for ef, stats in entry["ef_search"].items():
            if stats["recall@10"] >= 0.99 and (best is None or stats["p95_ms"] < best["p95_ms"]):
                best = {"m": int(name[6:]), "ef_search": int(ef), **stats}
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--m", default="16,32")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    faiss.omp_set_num_threads(1)  # the service's default (DOCUTHINKER_RAG_FAISS_THREADS)
    out = {"date": dt.date.today().isoformat(), "cpu_count": psutil.cpu_count(),
           "load_avg_at_start": [round(x, 2) for x in psutil.getloadavg()],
           "note": "synthetic clustered vectors; single-thread searches; shared noisy machine", "sizes": {}}
    for n in (int(s) for s in args.sizes.split(",")):
        size = one_size(n, [int(m) for m in args.m.split(",")], args.queries)
        size["choice"] = choose(size)
        out["sizes"][n] = size
        print(json.dumps(size, indent=2), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"ann-{out['date']}.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
