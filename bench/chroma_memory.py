"""What ChromaDB, the old durable vector copy, kept resident in the rag process (run alone).

Writes ``n`` MiniLM-sized vectors (384-d float32, random: Chroma's memory does not depend on
their values) into a Chroma PersistentClient collection as the old ``VectorStore`` did (cosine
space, 1,000 per upsert, tenant/document metadata), then in a fresh process replays what the old
rag process did: open, page through every id with its metadata (startup), read every embedding
(rebuilding FAISS), one upsert of 1,000 (an ingestion). RSS after each step, minus the RSS of
the same process before Chroma was opened, is Chroma's share. Compare with ``vector_log``, which
holds nothing resident (its SQLite page cache is 2 MiB).

Usage: python -m bench.chroma_memory [--n 200000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np
import psutil

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def _rss() -> float:
    gc.collect()
    return round(psutil.Process().memory_info().rss / 2**20, 1)


def _collection(root: str):
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=root, settings=Settings(anonymized_telemetry=False))
    return client.get_or_create_collection("all-MiniLM-L6-v2-384d", embedding_function=None,
                                           metadata={"hnsw:space": "cosine"})


def _upsert(collection, start: int, count: int, rng: np.random.Generator) -> None:
    vectors = rng.standard_normal((count, 384)).astype(np.float32)
    collection.upsert(ids=[f"{i:032x}" for i in range(start, start + count)], embeddings=vectors,
                      metadatas=[{"tenant": "t", "document_id": f"d{start // 500}"}] * count)


def child(step: str, root: str, n: int) -> None:
    rng = np.random.default_rng(0)
    out = {"before_open_mib": _rss()}
    collection = _collection(root)
    out["open_mib"] = _rss()
    if step == "write":
        started = time.perf_counter()
        for start in range(0, n, 1000):
            _upsert(collection, start, 1000, rng)
        out |= {"after_write_mib": _rss(), "write_s": round(time.perf_counter() - started, 1)}
    else:
        offset = 0
        while ids := collection.get(include=["metadatas"], limit=20_000, offset=offset)["ids"]:
            offset += len(ids)
        out["after_reading_ids_mib"] = _rss()
        for start in range(0, n, 5000):
            collection.get(ids=[f"{i:032x}" for i in range(start, start + 5000)], include=["embeddings"])
        out["after_reading_vectors_mib"] = _rss()
        _upsert(collection, n, 1000, rng)
        out["after_one_ingestion_mib"] = _rss()
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--child", nargs=2, metavar=("STEP", "ROOT"))
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.n)
        return
    result: dict = {"date": dt.date.today().isoformat(), "vectors": args.n}
    with tempfile.TemporaryDirectory(prefix="docuthinker-chroma-") as root:
        for step in ("write", "restart"):
            done = subprocess.run([sys.executable, "-m", "bench.chroma_memory", "--n", str(args.n), "--child", step,
                                   root], check=True, capture_output=True, text=True)
            result[step] = json.loads(done.stdout.strip().splitlines()[-1])
        result["disk_mib"] = round(sum(p.stat().st_size for p in pathlib.Path(root).rglob("*") if p.is_file()) / 2**20)
    restart = result["restart"]
    result["resident_per_million_vectors_gib"] = round(
        (restart["after_one_ingestion_mib"] - restart["before_open_mib"]) / args.n * 1e6 / 1024, 2)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"chroma-memory-{result['date']}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
