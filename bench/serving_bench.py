"""Serving benchmark: query latency and throughput three ways, at 1k, 10k and 100k chunks.

For each corpus size (``bench.synthetic_corpus``: real SciFact chunks recombined, one tenant
per size, written through the production store API) and each operation (Search =
retrieval only, Query = retrieval + the grounded answer, extractive offline by default):

- ``inprocess``: the domain call (``AnswerService`` from the service's ``build_answering``);
- ``grpc``: the real rag service process, directly;
- ``rest``: the same process behind the real Envoy (gRPC-JSON transcoding);

closed-loop clients at concurrency 1, 4 and 16 (latency p50/p95/p99), and higher levels while
throughput still grows (saturation). Rounds interleave the three ways; overheads are paired
per round. Queries are SciFact train questions. Search cycles through all of them (nothing
is cached on that path). Answering caches sentence vectors per process (``CachedEncoder``),
so Query is measured twice: cold (each way answers its own unseen questions one at a time)
(at the first corpus size only) and warm (a fixed set of questions every way has answered
once before the timed rounds). Peak RSS of every mesh process is read from
the kernel (VmHWM) at the end. Clients run in this process (Python grpcio/aiohttp), so their
cost is part of the gRPC and REST figures, as it is for any Python caller.

    python -m bench.serving_bench [--quick] [--sizes 1000,10000] [--out PATH]

Goals: REST (Envoy + gRPC) p50 <= in-process p50 + 5 ms for Search; in-process Search p95 <=
50 ms at 100k chunks.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import pathlib
import random
import tempfile
import time
from dataclasses import dataclass, replace

from bench.environment import describe as environment
from bench.load import LadderConfig, ladder
from bench.serving_clients import OPERATIONS, WAYS, GrpcClient, RestClient, inprocess
from bench.serving_summary import agreement, overheads, summarise_way
from bench.shared import SHARED
from bench.stats import latency_summary
from bench.synthetic_corpus import CorpusWriter, base_pool, synthetic_chunks

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
QUERIES = SHARED / "data" / "scifact" / "queries.train.jsonl"
OVERHEAD_GOAL_MS = 5.0
P95_GOAL_MS = 50.0
GOAL_SIZE = 100_000


@dataclass(frozen=True)
class ServingPlan:
    sizes: tuple[int, ...]
    pool: int
    """Real chunks embedded for the base pool (see bench.synthetic_corpus)."""
    rounds: int
    search: LadderConfig
    query: LadderConfig
    queries: int
    warmup: int
    agreement_queries: int
    query_set: int
    """Distinct questions of the Query measurement (answered once per way before timing)."""
    cold_queries: int
    """Questions each way answers first, timed one at a time: the answer cache is cold for them."""


QUICK = ServingPlan(
    sizes=(1000, 10_000), pool=256, rounds=2,
    search=LadderConfig(levels=(1, 4, 16, 32), base_requests=24, per_client_requests=1),
    query=LadderConfig(levels=(1, 4, 16), base_requests=6, per_client_requests=1),
    queries=100, warmup=3, agreement_queries=10, query_set=12, cold_queries=4,
)
FULL = ServingPlan(
    sizes=(1000, 10_000, 100_000), pool=1024, rounds=3,
    search=LadderConfig(levels=(1, 2, 4, 8, 16, 32, 64), base_requests=100, per_client_requests=3),
    query=LadderConfig(levels=(1, 2, 4, 8, 16, 32), base_requests=24, per_client_requests=2),
    queries=300, warmup=5, agreement_queries=30, query_set=40, cold_queries=10,
)


def tenant_of(size: int) -> str:
    return f"serving-{size}"


def load_queries(count: int, seed: int = 3) -> list[str]:
    texts = [json.loads(line)["text"] for line in QUERIES.open()]
    return random.Random(seed).sample(texts, min(count, len(texts)))


async def _timed(call, text: str) -> tuple[float, list[str]]:
    started = time.perf_counter()
    ids = await call(text)
    return (time.perf_counter() - started) * 1000, ids


async def measure_size(size: int, plan: ServingPlan, factories: dict, queries: list[str], cold: bool) -> dict:
    """Search over every query; Query warm (steady state) and, if ``cold``, cold (first sight).

    Cold answers are measured at the first corpus size only: later sizes share sentences with
    it (the corpora are recombined from one pool), so their "cold" questions would not be.
    """
    tenant = tenant_of(size)
    result: dict = {}
    for operation in OPERATIONS:
        config = plan.search if operation == "search" else plan.query
        calls = {way: factories[way](operation, tenant) for way in WAYS}
        extra: dict = {}
        workload = queries if operation == "search" else queries[: plan.query_set]
        if operation == "query" and cold:
            # Answering caches sentence vectors per process: each way's cold questions are its own
            # (disjoint sets); afterwards every way sees the measured questions once before timing.
            cold_pool = queries[plan.query_set:]
            extra["cold_c1_ms"] = {}
            for i, way in enumerate(WAYS):
                unseen = cold_pool[i * plan.cold_queries : (i + 1) * plan.cold_queries]
                extra["cold_c1_ms"][way] = latency_summary([(await _timed(calls[way], q))[0] for q in unseen])
        ids = {way: [(await _timed(call, q))[1] for q in workload[: max(plan.warmup, plan.agreement_queries)]]
               for way, call in calls.items()}
        if operation == "query":
            for call in calls.values():
                for q in workload:
                    await call(q)
        rounds: dict[str, list[dict]] = {way: [] for way in WAYS}
        for r in range(plan.rounds):
            order = WAYS[r % len(WAYS):] + WAYS[: r % len(WAYS)]  # no way always goes first
            offset = (r * 37) % len(workload)
            rotated = workload[offset:] + workload[:offset]
            for way in order:
                rounds[way].append(await ladder(calls[way], rotated, config))
                print(f"[serving] {size} {operation} {way} round {r + 1}: "
                      + ", ".join(f"c{lv['concurrency']} p50 {lv['latency_ms'].get('p50')} ms {lv['qps']} qps"
                                  for lv in rounds[way][-1]["levels"]), flush=True)
        result[operation] = {
            "distinct_queries": len(workload),
            "ways": {way: summarise_way(rounds[way]) for way in WAYS},
            "overhead": overheads(rounds, config.required),
            "agreement": agreement({w: v[: plan.agreement_queries] for w, v in ids.items()}),
            **extra,
            "raw_rounds": rounds,
        }
    return result


def status_mib(pid: int, field: str) -> float | None:
    """A memory field of /proc/<pid>/status (``VmHWM``: peak RSS, ``VmRSS``: now) in MiB; None when gone."""
    try:
        for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def peak_rss_mb(pid: int) -> float | None:
    return status_mib(pid, "VmHWM")


def goals(measurements: dict) -> dict:
    out = {}
    for size, by_op in measurements.items():
        rest = by_op["search"]["overhead"]["rest_vs_inprocess"].get(1)
        if rest is not None:
            out[f"search {size}: REST p50 - in-process p50 <= {OVERHEAD_GOAL_MS} ms (c=1)"] = (
                rest["p50_diff_ms"] <= OVERHEAD_GOAL_MS)
    largest = max(measurements)
    p95 = measurements[largest]["search"]["ways"]["inprocess"]["by_concurrency"][1]["p95_ms"]
    label = f"search {largest}: in-process p95 <= {P95_GOAL_MS} ms (c=1)"
    out[label if largest >= GOAL_SIZE else label + f" [goal is at {GOAL_SIZE}; largest run: {largest}]"] = (
        p95 <= P95_GOAL_MS)
    return out


async def run_async(plan: ServingPlan) -> dict:
    from services.launcher.mesh import Mesh
    from services.models.embedder import get_embedder
    from services.providers.router import Router
    from services.providers.settings import ProviderSettings
    from services.rag.answers.settings import AnswerSettings
    from services.rag.answers.setup import build_answering

    started = time.perf_counter()
    queries = load_queries(plan.queries)
    pool = await asyncio.to_thread(base_pool, plan.pool)  # worker thread: see seed_baseline.in_worker_thread
    embedder = get_embedder()
    corpora: dict = {}
    with tempfile.TemporaryDirectory(prefix="docuthinker-serving-") as tmp:
        root = pathlib.Path(tmp)
        # Stores are opened and written in a worker thread, as the service does (RagRuntime.open
        # runs in asyncio.to_thread), so the in-process path runs as the service runs.
        writer = await asyncio.to_thread(CorpusWriter, root / "data")
        try:
            for size in plan.sizes:
                texts, vectors = synthetic_chunks(pool, size, seed=size, max_chars=900)
                corpora[size] = await asyncio.to_thread(writer.write, tenant_of(size), texts, vectors)
                print(f"[serving] corpus {size}: {corpora[size]}", flush=True)
            answers, _ = build_answering(writer.index, writer.metadata, embedder, AnswerSettings(),
                                         Router.from_settings(ProviderSettings()))
            mesh_started = time.perf_counter()
            # The rag process loads FAISS from its snapshot and the vector log before SERVING.
            with Mesh(data_dir=root / "data", log_dir=root / "logs", auto_ports=True,
                      startup_timeout_s=3600) as mesh:
                startup_s = time.perf_counter() - mesh_started
                grpc_client, rest_client = GrpcClient(mesh.grpc_target("rag"), mesh.grpc_metadata()), RestClient(mesh.base_url, mesh.mint)
                factories = {"inprocess": inprocess(answers), "grpc": grpc_client.factory,
                             "rest": rest_client.factory}
                measurements = {}
                try:
                    for size in plan.sizes:
                        measurements[size] = await measure_size(size, plan, factories, queries,
                                                                cold=size == plan.sizes[0])
                    engine = (await answers.answer(tenant_of(plan.sizes[0]), queries[0])).engine
                finally:
                    await grpc_client.close()
                    await rest_client.close()
                memory = {name: peak_rss_mb(pid) for name, pid in mesh.pids().items()}
        finally:
            writer.close()
    memory["bench_process (in-process path + clients)"] = peak_rss_mb(os.getpid())
    return {
        "benchmark": "serving",
        "date": dt.date.today().isoformat(),
        "environment": environment(embedder_device=embedder.device),
        "plan": {"sizes": list(plan.sizes), "base_pool": plan.pool, "rounds": plan.rounds,
                 "search_levels": list(plan.search.levels), "query_levels": list(plan.query.levels),
                 "queries": len(queries)},
        "corpora": {str(k): v for k, v in corpora.items()},
        "mesh_startup_s": round(startup_s, 1),
        "answer_engine": {"provider": engine.provider, "model": engine.model},
        "measurements": {str(k): v for k, v in measurements.items()},
        "peak_rss_mb": memory,
        "goals": goals(measurements),
        "seconds": round(time.perf_counter() - started, 1),
    }


def run(quick: bool, sizes: tuple[int, ...] | None = None) -> dict:
    plan = QUICK if quick else FULL
    if sizes:
        plan = replace(plan, sizes=sizes)
    result = asyncio.run(run_async(plan))
    result["variant"] = "quick" if quick else "full"
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1k and 10k chunks, fewer requests, 2 rounds")
    parser.add_argument("--sizes", default="", help="comma-separated corpus sizes (overrides the plan's)")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(",") if s)
    result = run(args.quick, sizes or None)
    out = args.out or RESULTS / f"serving-{result['date']}{'-quick' if args.quick else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["goals"], indent=1))
    print(f"[serving] wrote {out}")


if __name__ == "__main__":
    main()
