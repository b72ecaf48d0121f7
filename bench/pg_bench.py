"""PostgreSQL backend against the embedded stores, side by side in one run (``python -m bench.pg_bench``).

1. SciFact (BEIR, train queries) nDCG@10 and Recall@100 through the production ``HybridRetriever``
   for every fusion method, on the embedded stores (SQLite, FAISS, bm25s) and on PostgreSQL with
   each keyword mode: ``fts`` (full text, ``ts_rank``) and ``bm25`` (the embedded BM25 as a per-replica
   cache of the database). Same chunks, same cached vectors (``bench.scifact``, ``bench.corpus``).
   Goal: the default fusion within 0.005 nDCG@10 of embedded.
2. Search latency at 100k chunks: the synthetic corpus of the serving benchmark
   (``bench.synthetic_corpus``: 1024 real SciFact chunks embedded for real, the rest recombined
   from them, vectors mixed from theirs: synthetic, not real embeddings) written through each
   backend's production store API; then in-process ``HybridRetriever.retrieve`` (default fusion,
   top_k 8), and its dense and keyword halves alone, over SciFact queries with cached vectors,
   one client, p50/p95. PostgreSQL runs locally (pgserver, unix socket), so no network is counted.

    python -m bench.pg_bench [--full] [--chunks 100000] [--queries 200] [--out PATH]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import pathlib
import tempfile
import time

from bench import scifact
from bench.corpus import BenchCorpus, DiskCachedEncoder
from bench.environment import describe as environment
from bench.stats import latency_summary
from bench.synthetic_corpus import CHUNKS_PER_DOCUMENT, _document, base_pool, synthetic_chunks
from services.models.embedder import MODEL_NAME
from services.rag.documents import GraphSyncState
from services.rag.retrieval import HybridRetriever, RetrievalConfig
from services.rag.runtime import open_postgres_stores
from services.rag.settings import RagSettings
from services.storage.local_server import LocalPostgres
from services.storage.postgres import close_shared
from services.storage.settings import StorageSettings

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
NDCG_GOAL = 0.005
BACKENDS = ("embedded", "postgres-fts", "postgres-bm25")


def storage_for(backend: str, server: LocalPostgres, database: str) -> StorageSettings | None:
    if backend == "embedded":
        return None
    return StorageSettings(store_backend="postgres", postgres_dsn=server.create_database(database),
                           postgres_keyword=backend.split("-", 1)[1])


def quality(server: LocalPostgres, quick: bool) -> dict:
    corpus_all, queries_all, qrels = scifact.load()
    texts, queries = scifact.sample(corpus_all, queries_all, qrels, quick)
    encoder = DiskCachedEncoder("scifact")
    encoder.encode(list(queries.values()))
    out: dict = {"queries": len(queries), "documents": len(texts), "backends": {}}
    for backend in BACKENDS:
        storage = storage_for(backend, server, f"scifact_{backend.replace('-', '_')}")
        corpus = BenchCorpus(encoder, storage=storage)
        try:
            corpus.add(texts.items())
            methods = scifact.evaluate(corpus, queries, qrels, scifact.FUSIONS, encoder)
            out["backends"][backend] = {"chunks": corpus.chunk_count, "index_seconds": round(corpus.index_seconds, 1),
                                        "methods": methods}
        finally:
            corpus.close()
            if storage is not None:
                close_shared(storage.dsn())
        print(backend, json.dumps(out["backends"][backend]["methods"]), flush=True)
    default = {"SCORE": "score", "RRF": "rrf", "DENSE_ONLY": "dense", "KEYWORD_ONLY": "bm25"}[
        RetrievalConfig().default_fusion.name]
    out["default_fusion"] = default
    base = out["backends"]["embedded"]["methods"]
    out["ndcg@10_difference_vs_embedded"] = {
        backend: {m: round(r["methods"][m]["ndcg@10"] - base[m]["ndcg@10"], 4) for m in base}
        for backend, r in out["backends"].items() if backend != "embedded"}
    out["goal"] = {backend: abs(d[default]) <= NDCG_GOAL for backend, d in out["ndcg@10_difference_vs_embedded"].items()}
    return out


def _write(corpus: BenchCorpus, tenant: str, texts: list[str], vectors) -> float:
    started = time.perf_counter()
    for start in range(0, len(texts), CHUNKS_PER_DOCUMENT):
        part = texts[start : start + CHUNKS_PER_DOCUMENT]
        record, section, chunks = _document(tenant, start // CHUNKS_PER_DOCUMENT, part)
        corpus.metadata.upsert_document(record)
        corpus.index.stage_vectors(tenant, record.document_id, chunks, vectors[start : start + len(part)])
        corpus.index.publish(record, [section], chunks, GraphSyncState.DISABLED)
    corpus.index.keyword.refresh(tenant)
    return round(time.perf_counter() - started, 1)


def _timed(corpus_index, encoder, queries: list[str], warmup: int, depth: int, config) -> dict:
    retriever = HybridRetriever(corpus_index, encoder, config)
    timings: dict[str, list[float]] = {"search": [], "dense": [], "keyword": []}
    for n, query in enumerate(queries):
        vector = encoder.encode([query])[0]
        samples = {}
        started = time.perf_counter()
        retriever.retrieve(BenchCorpus.TENANT, query, top_k=8)
        samples["search"] = time.perf_counter() - started
        started = time.perf_counter()
        corpus_index.dense_search(BenchCorpus.TENANT, vector, depth)
        samples["dense"] = time.perf_counter() - started
        started = time.perf_counter()
        corpus_index.keyword_search(BenchCorpus.TENANT, query, depth)
        samples["keyword"] = time.perf_counter() - started
        if n >= warmup:
            for name, seconds in samples.items():
                timings[name].append(seconds * 1000)
    return {name: latency_summary(ms) for name, ms in timings.items()}


def latency(server: LocalPostgres, chunks: int, query_count: int, warmup: int = 20) -> dict:
    """Both PostgreSQL keyword modes read the same database (written once); embedded has its own stores."""
    pool = base_pool(1024)
    texts, vectors = synthetic_chunks(pool, chunks, seed=7, max_chars=RagSettings().chunk_size)
    queries = [json.loads(line)["text"] for line in scifact.DATA.joinpath("queries.train.jsonl").open()]
    queries = queries[: query_count + warmup]
    encoder = DiskCachedEncoder("scifact")
    encoder.encode(queries)
    encoder.save()
    config = RetrievalConfig()
    depth = max(8 * config.candidate_factor, config.min_candidates)
    out: dict = {"chunks": chunks, "queries": query_count, "top_k": 8, "vectors": "synthetic (see module doc)",
                 "backends": {}}
    for backend in ("embedded", "postgres-fts"):
        storage = storage_for(backend, server, f"serving_{backend.replace('-', '_')}")
        corpus = BenchCorpus(encoder, storage=storage)
        try:
            write_s = _write(corpus, BenchCorpus.TENANT, texts, vectors)
            out["backends"][backend] = {"write_seconds": write_s,
                                        **_timed(corpus.index, encoder, queries, warmup, depth, config)}
            print(backend, json.dumps(out["backends"][backend]), flush=True)
            if storage is not None:
                bm25 = storage.model_copy(update={"postgres_keyword": "bm25"})
                *_, index = open_postgres_stores(corpus.root, bm25, MODEL_NAME, 384)
                started = time.perf_counter()
                index.keyword.refresh(BenchCorpus.TENANT)
                build_s = round(time.perf_counter() - started, 1)
                out["backends"]["postgres-bm25"] = {"bm25_cache_build_seconds": build_s,
                                                    **_timed(index, encoder, queries, warmup, depth, config)}
                print("postgres-bm25", json.dumps(out["backends"]["postgres-bm25"]), flush=True)
        finally:
            corpus.close()
            if storage is not None:
                close_shared(storage.dsn())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="all SciFact train queries and documents")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    result: dict = {"date": dt.date.today().isoformat(), "environment": environment(),
                    "postgres": "pgserver 0.1.4: PostgreSQL 16.2, pgvector 0.6.2, local unix socket",
                    "hnsw": {"m": 16, "ef_construction": 64, "ef_search": StorageSettings().postgres_hnsw_ef_search}}
    path = args.out or RESULTS / f"pg-{result['date']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:  # after each part: a long run keeps what it measured
        result["seconds"] = round(time.perf_counter() - started, 1)
        path.write_text(json.dumps(result, indent=2) + "\n")

    with tempfile.TemporaryDirectory(prefix="docuthinker-pgbench-") as tmp, LocalPostgres(pathlib.Path(tmp)) as server:
        if not args.skip_quality:
            result["scifact"] = {"variant": "full" if args.full else "quick", **quality(server, not args.full)}
            save()
        if not args.skip_latency:
            result["search_latency"] = latency(server, args.chunks, args.queries)
    save()
    print(json.dumps(result, indent=2))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
