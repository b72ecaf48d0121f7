"""Memory of the two vector backends for the same vectors: the embedded store (vector log + FAISS) in the rag
process, against ``DOCUTHINKER_RAG_VECTOR_BACKEND=chroma`` (a ``chroma run`` server plus the chromadb client in
the rag process).

Writes ``n`` MiniLM-sized vectors (384-d, random, L2-normalised) for one tenant, 1,000 per ``add`` as ingestion
does, then restarts (a fresh process; for Chroma a fresh server too) and runs 100 searches, the restart state a
serving replica is in. Reported: the rag process's RSS growth over its RSS before the store was opened (both
backends), and the Chroma server's RSS idle, after the writes and after the restart's searches.

Usage: python -m bench.chroma_server_memory [--n 20000]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
import json
import pathlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import httpx
import numpy as np
import psutil

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
DIM = 384


def _rss(pid: int | None = None) -> float:
    """This process's RSS, or a server's with its children's."""
    gc.collect()
    process = psutil.Process(pid)
    tree = [process, *process.children(recursive=True)] if pid else [process]
    return round(sum(p.memory_info().rss for p in tree) / 2**20, 1)


def _batches(n: int) -> Iterator[tuple[list[str], np.ndarray]]:
    rng = np.random.default_rng(0)
    for start in range(0, n, 1000):
        count = min(1000, n - start)
        v = rng.standard_normal((count, DIM)).astype(np.float32)
        yield [f"{i:032x}" for i in range(start, start + count)], v / np.linalg.norm(v, axis=1, keepdims=True)


def _store(backend: str, where: str):
    if backend == "local":
        from services.rag.store import VectorStore

        return VectorStore(pathlib.Path(where) / "chroma", "bench", DIM, snapshot_dir=pathlib.Path(where) / "ann")
    from services.rag.store.chroma_vectors import ChromaVectors

    return ChromaVectors(where, "bench", DIM)


def child(step: str, backend: str, where: str, n: int) -> None:
    out = {"before_open_mib": _rss()}
    store = _store(backend, where)
    if step == "write":
        started = time.perf_counter()
        for ids, vectors in _batches(n):
            store.add("t", "d", ids, vectors)
        out["write_s"] = round(time.perf_counter() - started, 1)
    else:
        known = {i for ids, _ in _batches(n) for i in ids}
        store.rebuild(known)
        queries = np.random.default_rng(1).standard_normal((100, DIM)).astype(np.float32)
        started = time.perf_counter()
        for query in queries:
            store.search("t", query / np.linalg.norm(query), 10)
        out["search_ms"] = round((time.perf_counter() - started) * 10, 2)
    out["rag_process_growth_mib"] = round(_rss() - out["before_open_mib"], 1)
    print(json.dumps(out))


def _run_child(step: str, backend: str, where: str, n: int) -> dict:
    done = subprocess.run([sys.executable, "-m", "bench.chroma_server_memory", "--n", str(n), "--child", step,
                           backend, where], check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def _chroma_server(path: pathlib.Path) -> Iterator[tuple[str, int]]:
    from services.launcher.probes import free_port

    port = free_port()
    server = subprocess.Popen([str(pathlib.Path(sys.executable).with_name("chroma")), "run", "--path", str(path),
                               "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            time.sleep(0.1)
        yield url, server.pid
    finally:
        server.terminate()
        server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--child", nargs=3, metavar=("STEP", "BACKEND", "WHERE"))
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.n)
        return
    result: dict = {"date": dt.date.today().isoformat(), "vectors": args.n, "dimension": DIM}
    with tempfile.TemporaryDirectory(prefix="docuthinker-vectors-") as root:
        result["local"] = {step: _run_child(step, "local", root, args.n) for step in ("write", "restart")}
        chroma: dict = {}
        data = pathlib.Path(root) / "chroma-server"
        with _chroma_server(data) as (url, pid):
            chroma["server_idle_mib"] = _rss(pid)
            chroma["write"] = _run_child("write", "chroma", url, args.n)
            chroma["server_after_write_mib"] = _rss(pid)
        with _chroma_server(data) as (url, pid):
            chroma["restart"] = _run_child("restart", "chroma", url, args.n)
            chroma["server_after_restart_searches_mib"] = _rss(pid)
        result["chroma"] = chroma
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"chroma-server-memory-{result['date']}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
