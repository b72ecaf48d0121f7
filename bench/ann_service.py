"""The rag process holding one large tenant: resident memory, and Search through gRPC and REST.

Used by ``bench/ann_scale.py --service``. The corpus is written as ingestion writes it
(``CorpusWriter``: SQLite chunk rows, the vector log, then the tenant's BM25 index); the HNSW
graph the in-process benchmark already built for the same keys is placed as the tenant's
snapshot, so the rag process loads it at startup as after any restart (no second build). Then a
real mesh starts on that data directory and every question is searched once over the rag port
(gRPC) and once through Envoy (REST). Search is the production hybrid retrieval (the rag process
embeds the question, dense HNSW + BM25, fusion), so its latency is what a client sees, not the
HNSW lookup alone. Memory: the rag process's RSS after startup, after the searches, and its peak
(VmHWM), read from /proc.
"""

from __future__ import annotations

import asyncio
import pathlib
import statistics
import time

import numpy as np

from bench.serving_bench import peak_rss_mb, status_mib
from bench.serving_clients import GrpcClient, RestClient
from bench.synthetic_corpus import CorpusWriter
from services.rag.store.ann import HnswIndex


def rss_mib(pid: int) -> float | None:
    return status_mib(pid, "VmRSS")


def texts_for(sentences: list[str], n: int, seed: int = 6) -> list[str]:
    """Chunk texts for BM25: sentence ``i`` (the one vector ``i`` came from) and two random others."""
    rng = np.random.default_rng(seed)
    others = rng.integers(0, len(sentences), (n, 2))
    return [f"{sentences[i % len(sentences)]} {sentences[a]} {sentences[b]}" for i, (a, b) in enumerate(others.tolist())]


def seed(data_dir: pathlib.Path, tenant: str, texts: list[str], vectors: np.ndarray, index: HnswIndex) -> dict:
    writer = CorpusWriter(data_dir, hnsw_threshold=len(texts) + 1)
    try:
        written = writer.write(tenant, texts, vectors)
        path = writer.vectors.snapshot_path(tenant)
        path.parent.mkdir(parents=True, exist_ok=True)
        index.save(path)
    finally:
        writer.close()
    return written


async def _timed(call, questions: list[str]) -> dict:
    times = []
    for text in questions:
        started = time.perf_counter()
        await call(text)
        times.append((time.perf_counter() - started) * 1000)
    return {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(float(np.percentile(times, 95)), 1),
            "queries": len(times)}


async def measure(data_dir: pathlib.Path, log_dir: pathlib.Path, tenant: str, questions: list[str]) -> dict:
    from services.launcher.mesh import Mesh

    started = time.perf_counter()
    with Mesh(data_dir=data_dir, log_dir=log_dir, auto_ports=True, startup_timeout_s=3600) as mesh:
        startup_s = time.perf_counter() - started
        pid = mesh.pids()["rag"]
        out: dict = {"mesh_startup_s": round(startup_s, 1), "rag_rss_after_start_mib": rss_mib(pid)}
        grpc_client = GrpcClient(mesh.grpc_target("rag"), mesh.grpc_metadata())
        rest_client = RestClient(mesh.base_url, mesh.mint)
        try:
            await grpc_client.factory("search", tenant)(questions[0])  # the first search loads BM25
            out["rag_rss_after_first_search_mib"] = rss_mib(pid)
            out["grpc_search"] = await _timed(grpc_client.factory("search", tenant), questions)
            out["rest_search"] = await _timed(rest_client.factory("search", tenant), questions)
        finally:
            await grpc_client.close()
            await rest_client.close()
        out["rag_rss_after_searches_mib"] = rss_mib(pid)
        out["rag_peak_rss_mib"] = peak_rss_mb(pid)
    return out


def run(root: pathlib.Path, tenant: str, texts: list[str], vectors: np.ndarray, index: HnswIndex,
        questions: list[str]) -> dict:
    started = time.perf_counter()
    written = seed(root / "data", tenant, texts, vectors, index)
    written["seed_s"] = round(time.perf_counter() - started, 1)
    print(f"  seeded the data directory: {written}", flush=True)
    return {"corpus": written, **asyncio.run(measure(root / "data", root / "logs", tenant, questions))}
