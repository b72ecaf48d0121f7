"""Graph benchmark: streamed fact upserts and 2-hop related-document queries on both backends.

Each backend gets the same synthetic corpus (default 1,000 documents x 10 facts = 10,000 fact
upserts: 5 topics from a vocabulary of 300 and 5 entities from 500, Zipf-skewed so some topics
are shared widely), written through the service's own batching (UpsertBatcher, default batch
size) into the store, then re-ingested once (the idempotent replace path), then queried:
GetRelatedDocuments' domain call (2-hop over topics and entities, ranked) for random documents.
Backends: embedded LadybugDB, and ArcadeDB's Bolt server through the production neo4j-driver
store (started locally, one database per tenant). No gRPC in the timings: this measures the graph.

    python -m bench.graph_bench [--documents 1000] [--facts 10] [--queries 300] [--backends ladybug,arcadedb]

Writes bench/results/graph-<date>.json and prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import hashlib
import json
import os
import pathlib
import platform
import random
import statistics
import tempfile
import time
from importlib import metadata
from typing import Any

from services.graph.knowledge_graph import KnowledgeGraph
from services.graph.settings import GraphSettings
from services.graph.store import GraphStore
from services.runtime import request_context

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
TENANT = "bench"


def corpus(documents: int, facts: int, seed: int = 13) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    topics = [f"Topic {i}" for i in range(300)]
    entities = [f"Entity {i} Inc." for i in range(500)]

    def skewed(vocabulary: list[str]) -> str:
        return vocabulary[min(int(rng.paretovariate(1.2)) - 1, len(vocabulary) - 1) if rng.random() < 0.5
                          else rng.randrange(len(vocabulary))]

    docs = []
    for i in range(documents):
        n_topics = facts // 2
        docs.append({
            "id": f"doc-{i:05d}",
            "title": f"Document {i}",
            "topics": [(skewed(topics), round(rng.uniform(0.05, 1.0), 3)) for _ in range(n_topics)],
            "entities": [(skewed(entities), "ORG", rng.randint(1, 6)) for _ in range(facts - n_topics)],
        })
    return docs


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


async def ingest(graph: KnowledgeGraph, docs: list[dict[str, Any]]) -> tuple[float, int]:
    started = time.perf_counter()
    batcher = graph.upsert_batcher(TENANT)
    for doc in docs:
        await batcher.start_document(doc["id"], doc["title"], "txt")
        for name, weight in doc["topics"]:
            batcher.add_topic(name, weight)
        for name, entity_type, count in doc["entities"]:
            batcher.add_entity(name, entity_type, count)
    summary = await batcher.finish()
    return time.perf_counter() - started, summary.batches


async def run_backend(name: str, store: GraphStore, docs: list[dict[str, Any]], queries: int) -> dict[str, Any]:
    graph = KnowledgeGraph(store, GraphSettings())
    token = request_context.bind(request_context.RequestContext(request_id="bench", tenant=TENANT))
    try:
        await graph.stats(TENANT)  # opens/provisions the tenant database outside the timings
        upsert_s, batches = await ingest(graph, docs)
        reingest_s, _ = await ingest(graph, docs)
        stats = await graph.stats(TENANT)
        rng = random.Random(5)
        sample = [rng.choice(docs)["id"] for _ in range(queries)]
        for doc_id in sample[:10]:
            await graph.related(TENANT, doc_id, 10)  # warm-up
        latencies, sizes, answers = [], [], []
        for doc_id in sample:
            started = time.perf_counter()
            related = await graph.related(TENANT, doc_id, 10)
            latencies.append((time.perf_counter() - started) * 1000)
            sizes.append(len(related))
            answers.append([(r.document_id, r.score, r.shared_topics, r.shared_entities) for r in related])
    finally:
        request_context.unbind(token)
    facts = sum(len(d["topics"]) + len(d["entities"]) for d in docs)
    return {
        "backend": name,
        "fact_upserts": facts,
        "documents": len(docs),
        "upsert_seconds": round(upsert_s, 3),
        "upserts_per_second": round(facts / upsert_s),
        "transactions": batches,
        "reingest_seconds": round(reingest_s, 3),
        "graph": {"documents": stats.documents, "topics": stats.topics, "entities": stats.entities,
                  "covers_edges": stats.covers_edges, "mentions_edges": stats.mentions_edges},
        "related_2hop_ms": {
            "queries": len(latencies),
            "p50": round(percentile(latencies, 50), 3),
            "p95": round(percentile(latencies, 95), 3),
            "mean": round(statistics.fmean(latencies), 3),
        },
        "related_results_mean": round(statistics.fmean(sizes), 2),
        # Same corpus and sample on every backend: equal digests mean identical related lists.
        "related_digest": hashlib.sha256(json.dumps(answers).encode()).hexdigest()[:16],
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    docs = corpus(args.documents, args.facts)
    results = []
    with tempfile.TemporaryDirectory(prefix="graph-bench-") as tmp:
        root = pathlib.Path(tmp)
        for backend in args.backends.split(","):
            if backend == "ladybug":
                from services.graph.ladybug_store import LadybugGraphStore

                store = LadybugGraphStore(root / "ladybug", GraphSettings())
                try:
                    results.append(await run_backend("ladybug", store, docs, args.queries))
                finally:
                    await store.close()
            elif backend == "arcadedb":
                from services.graph.neo4j_store import Neo4jGraphStore
                from tests.graph.arcadedb_local import LocalArcadeDb

                with LocalArcadeDb(root / "arcadedb") as server:
                    store = Neo4jGraphStore(server.settings())
                    try:
                        results.append(await run_backend("arcadedb-bolt (neo4j driver)", store, docs, args.queries))
                    finally:
                        await store.close()
            else:
                raise SystemExit(f"unknown backend {backend!r}")
    agree = len({json.dumps([r["graph"], r["related_digest"]]) for r in results}) == 1
    return {
        "benchmark": "graph",
        "backends_agree": agree,
        "date": dt.date.today().isoformat(),
        "machine": {"cpus": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 2),
                    "python": platform.python_version(), "platform": platform.platform()},
        "versions": {p: _version(p) for p in ("ladybug", "neo4j", "arcadedb-embedded")},
        "results": results,
    }


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--facts", type=int, default=10, help="facts per document (half topics, half entities)")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--backends", default="ladybug,arcadedb")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    report = asyncio.run(main_async(args))
    out = args.out or RESULTS / f"graph-{report['date']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
