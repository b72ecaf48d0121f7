"""Ingestion through Envoy against the seeds' pipeline, per embedding runtime (``make bench-ingest-seed``).

Issue #20's figures, side by side in one run on the same documents:

- **many small documents uploaded concurrently**: ``--small`` SciFact abstracts (seeded), one
  ``.txt`` upload each, ``--concurrency`` uploads in flight at once through Envoy (raw REST
  body, SSE progress read to ``done``), timed from the first byte sent to the last ``done``;
- **the same small documents at more uploads in flight** (``--sweep``, default 16 and 32; the first
  runtime only), each level under a tenant of its own so nothing is a duplicate: how far the
  share of the raw limit depends on how full the shared forward passes get;
- **one large document**: ``--large`` other abstracts in one ``.txt`` file, one upload;
- **the seeds' pipeline** (``bench.seed_pipeline``: LangChain splitter, Chroma, sentence-transformers
  ``encode`` in batches of 32, one document at a time, as the seeds ran it) on the same documents
  in this process;
- **the raw encode limit**: the chosen runtime's ``encode`` of exactly the chunks the service
  makes (production parser and chunker), one batched call in a worker thread (on every stream the
  service's embedder has), right before and right after the uploads it is compared with, while
  the mesh sits idle; the end-to-end share is chunks/s over the raw runs' mean. The CPU seconds
  each mesh process and this bench's uploading client spent during the uploads are recorded beside
  it: they share the same cores;
- **rounds** (``--rounds``, default 3, the first runtime): each workload runs that many times and the
  median round is reported with every round beside it;
- **blocks** (``--blocks``, default 3): a round of small uploads goes in that many consecutive blocks,
  each between two raw runs of exactly its own chunks (raw, uploads, raw per block). This machine's
  speed shifts by 10-20% within tens of seconds, so a raw run a whole round (~10 s of uploads and
  ~40 s of idle wait) away from the uploads misstated them by as much (rounds of one run ranged
  82-89%); each block's ramp up and down (~1% of its time) is counted against the mesh.

Each runtime gets its own fresh mesh (``DOCUTHINKER_EMBED_RUNTIME``), the ONNX files come from
one export cache shared with this process, so no mesh pays an export. The seeds' side runs once
per run, between the runtimes, since its runtime never changes. Ratios are the figures to read:
the machine is shared and noisy.

Usage: python -m bench.ingest_seed_bench [--runtimes onnx-int8,torch] [--small 300] [--large 300]
       [--concurrency 8] [--sweep 16,32] [--rounds 3] [--blocks 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import http.client
import json
import os
import pathlib
import random
import shutil
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import psutil

from bench.ingest_bench import SCIFACT, TENANT, PeakRss, Upload, chunked
from bench.seed_pipeline import SeedPipeline, seed_encode
from services.models.embedder import build_embedder, onnx_cache_dir
from services.models.settings import embedder_settings
from services.rag.settings import RagSettings

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def corpora(small: int, large: int, seed: int, settings: RagSettings, max_bytes: int) -> dict[str, list[Upload]]:
    with gzip.open(SCIFACT, "rt") as fh:
        abstracts = [(d["title"] + " " + d["text"]).strip() for d in map(json.loads, fh)]
    chosen = random.Random(seed).sample(abstracts, small + large)
    smalls = [chunked(Upload(f"abstract-{i:04d}.txt", text.encode()), settings, max_bytes)
              for i, text in enumerate(chosen[:small])]
    big = chunked(Upload("abstracts.txt", "\n\n".join(chosen[small:]).encode()), settings, max_bytes)
    return {"small_concurrent": smalls, "large_one": [big]}


class Uploader:
    """Raw-body uploads over one keep-alive ``http.client`` connection per thread, with the tenant's token
    minted once. The load generator shares the mesh's two cores, so it is kept lean: httpx spent about
    2.7 ms of CPU per upload here (0.8 CPU-s of 300 uploads), counted against the mesh's share."""

    def __init__(self, mesh, tenant: dict[str, str] = TENANT) -> None:
        url = urllib.parse.urlsplit(mesh.base_url)
        self._address = (url.hostname, url.port)
        token = mesh.mint(tenant.get("x-tenant-id", "default"))
        self._headers = {"content-type": "application/octet-stream",
                         **({"authorization": f"Bearer {token}"} if token else tenant)}
        self._local = threading.local()
        self._connections: list[http.client.HTTPConnection] = []

    def __enter__(self) -> Uploader:
        return self

    def __exit__(self, *exc) -> None:
        for connection in self._connections:
            connection.close()

    def post(self, upload: Upload) -> int:
        """Uploads one file, reads its progress stream to the end; the chunk count of its ``done`` event."""
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = http.client.HTTPConnection(*self._address, timeout=3600)
            self._connections.append(connection)
        connection.request("POST", "/v1/documents?" + urllib.parse.urlencode({"filename": upload.name}),
                           body=upload.data, headers=self._headers)
        reply = connection.getresponse()
        text = reply.read().decode()
        if reply.status != 200:
            raise RuntimeError(f"{upload.name}: HTTP {reply.status}: {text[:500]}")
        events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
        if not events or "done" not in events[-1]:
            raise RuntimeError(f"{upload.name}: stream ended with {events[-1:] or 'nothing'}")
        return int(events[-1]["done"]["document"]["chunk_count"])


def through_envoy(mesh, uploads: list[Upload], concurrency: int, tenant: dict[str, str] = TENANT) -> dict:
    expected = sum(len(u.chunks) for u in uploads)
    procs = {name: psutil.Process(pid) for name, pid in mesh.pids().items()}
    with Uploader(mesh, tenant) as uploader:
        peak = PeakRss(mesh.pids()["rag"])
        cpu_before = {name: sum(proc.cpu_times()[:2]) for name, proc in procs.items()}
        client_before = sum(psutil.Process().cpu_times()[:2])  # only the uploading threads run meanwhile
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            chunks = sum(pool.map(uploader.post, uploads))
        seconds = time.perf_counter() - started
        cpu = {name: round(sum(proc.cpu_times()[:2]) - cpu_before[name], 2) for name, proc in procs.items()}
        cpu["bench_client"] = round(sum(psutil.Process().cpu_times()[:2]) - client_before, 2)
        rss = peak.stop()
    if chunks != expected:
        raise RuntimeError(f"the service made {chunks} chunks, the bench computed {expected}")
    return {"documents": len(uploads), "chunks": chunks, "concurrency": concurrency, "seconds": round(seconds, 3),
            "docs_per_s": round(len(uploads) / seconds, 3), "chunks_per_s": round(chunks / seconds, 2),
            "rag_peak_rss_mib": round(rss / 2**20, 1), "cpu_s_by_process": cpu}


def wait_idle(pids: list[int], quiet_s: float = 1.0, limit_s: float = 300.0) -> float:
    """Waits until the mesh's processes use under 5% of a core for ``quiet_s`` (the background BM25 build and
    the sentence warm-up after an upload would otherwise be timed as the raw limit's); returns the wait."""
    procs = [psutil.Process(p) for p in pids]
    for proc in procs:
        proc.cpu_percent(None)
    started = time.perf_counter()
    while time.perf_counter() - started < limit_s:
        time.sleep(quiet_s)
        if sum(proc.cpu_percent(None) for proc in procs) < 5.0:
            break
    return round(time.perf_counter() - started, 1)


def raw_limit(embedder, texts: list[str]) -> dict:
    """One batched ``encode`` of every chunk, in a worker thread as the service calls it."""
    with ThreadPoolExecutor(max_workers=1) as worker:
        worker.submit(embedder.encode, texts[:32]).result()
        started = time.perf_counter()
        worker.submit(embedder.encode, texts).result()
        seconds = time.perf_counter() - started
    return {"chunks": len(texts), "seconds": round(seconds, 3), "chunks_per_s": round(len(texts) / seconds, 2)}


def seeds(uploads: list[Upload], root: pathlib.Path) -> dict:
    pipeline = SeedPipeline(root, seed_encode())
    texts = [(u.name, u.data.decode()) for u in uploads]
    with ThreadPoolExecutor(max_workers=1) as worker:
        started = time.perf_counter()
        chunks = worker.submit(lambda: sum(pipeline.ingest(k, t) for k, t in texts)).result()
        seconds = time.perf_counter() - started
    return {"documents": len(uploads), "chunks": chunks, "seconds": round(seconds, 3),
            "docs_per_s": round(len(uploads) / seconds, 3), "chunks_per_s": round(chunks / seconds, 2)}


def measured(mesh, embedder, uploads: list[Upload], concurrency: int, tenant: dict[str, str] = TENANT,
             rounds: int = 1, blocks: int = 1) -> dict:
    """``rounds`` end-to-end runs, each under a tenant of its own (nothing is a duplicate). A round's uploads
    go in ``blocks`` consecutive blocks, each timed between two raw-limit runs of exactly its chunks, taken
    with the mesh idle (raw, e2e, raw per block): the machine's speed drifts by 10-20% within tens of
    seconds here, so a raw run far from the uploads it is compared with misstates them. A round's share is
    its chunks over its end-to-end seconds, against its chunks over the raw seconds (the mean of each
    block's two). The median round is reported, every round beside it."""
    idle = lambda: wait_idle(list(mesh.pids().values()))  # noqa: E731
    cut = [uploads[len(uploads) * b // blocks: len(uploads) * (b + 1) // blocks] for b in range(blocks)]
    cut = [part for part in cut if part]
    waited = []
    runs = []
    for i in range(rounds):
        name = tenant.get("x-tenant-id", "default")
        round_tenant = {"x-tenant-id": f"{name}-r{i}"} if i else tenant
        parts = []
        for part in cut:
            texts = [t for u in part for t in u.chunks]
            waited.append(idle())
            before = raw_limit(embedder, texts)
            e2e = through_envoy(mesh, part, concurrency, round_tenant)
            waited.append(idle())
            parts.append((before, e2e, raw_limit(embedder, texts)))
        chunks = sum(e2e["chunks"] for _, e2e, _ in parts)
        raw_s = sum((before["seconds"] + after["seconds"]) / 2 for before, _, after in parts)
        e2e = merged([e2e for _, e2e, _ in parts])
        raw = chunks / raw_s
        run = {"end_to_end": e2e, "raw_chunks_per_s_mean": round(raw, 2),
               "share_of_raw_limit": round(e2e["chunks_per_s"] / raw, 3)}
        if len(parts) == 1:
            run.update(raw_before=parts[0][0], raw_after=parts[0][2])
        else:
            run["blocks"] = [{"raw_before": before, "end_to_end_seconds": e2e["seconds"], "raw_after": after}
                             for before, e2e, after in parts]
        runs.append(run)
    median = sorted(runs, key=lambda run: run["share_of_raw_limit"])[len(runs) // 2]
    out = {**median, "idle_wait_s": waited}
    if rounds > 1:
        out["rounds"] = runs
    return out


def merged(parts: list[dict]) -> dict:
    """One end-to-end record of consecutive blocks: their totals, the peak of their peaks."""
    if len(parts) == 1:
        return parts[0]
    documents = sum(p["documents"] for p in parts)
    chunks = sum(p["chunks"] for p in parts)
    seconds = sum(p["seconds"] for p in parts)
    cpu = {name: round(sum(p["cpu_s_by_process"][name] for p in parts), 2) for name in parts[0]["cpu_s_by_process"]}
    return {"documents": documents, "chunks": chunks, "concurrency": parts[0]["concurrency"],
            "seconds": round(seconds, 3), "docs_per_s": round(documents / seconds, 3),
            "chunks_per_s": round(chunks / seconds, 2), "blocks": len(parts),
            "rag_peak_rss_mib": max(p["rag_peak_rss_mib"] for p in parts), "cpu_s_by_process": cpu}


def run_runtime(runtime: str, sets: dict[str, list[Upload]], concurrency: int, root: pathlib.Path,
                keep_logs: pathlib.Path | None = None, sweep: tuple[int, ...] = (), rounds: int = 1,
                blocks: int = 1) -> dict:
    """``sweep``: more in-flight counts for the small uploads, each the same documents under a tenant of
    its own (so nothing is a duplicate and the raw limit is of the same texts)."""
    from services.launcher.mesh import Mesh

    settings = embedder_settings()
    embedder = build_embedder(runtime=runtime)
    env = {"DOCUTHINKER_EMBED_RUNTIME": runtime, "DOCUTHINKER_EMBED_CACHE_DIR": str(onnx_cache_dir(settings)),
           "DOCUTHINKER_LOG_LEVEL": "INFO" if keep_logs else "WARNING"}
    out: dict = {}
    with Mesh(data_dir=root / runtime / "data", log_dir=root / runtime / "logs", auto_ports=True,
              extra_env=env) as mesh:
        with Uploader(mesh) as uploader:  # loads the model and kernels; not counted
            uploader.post(Upload("warm-up.txt", b"A short warm-up document, not counted. " * 40))
        for name, uploads in sets.items():
            out[name] = measured(mesh, embedder, uploads, concurrency if name == "small_concurrent" else 1,
                                 rounds=rounds, blocks=blocks)
            print(f"[ingest-seed] {runtime} {name}: envoy {out[name]['end_to_end']['docs_per_s']} docs/s, "
                  f"{out[name]['share_of_raw_limit']:.0%} of raw", flush=True)
        for level in sweep:
            entry = measured(mesh, embedder, sets["small_concurrent"], level, {"x-tenant-id": f"bench-sweep-{level}"},
                             rounds, blocks)
            out.setdefault("small_concurrency_sweep", {})[str(level)] = entry
            print(f"[ingest-seed] {runtime} small, {level} in flight: envoy {entry['end_to_end']['docs_per_s']} "
                  f"docs/s, {entry['share_of_raw_limit']:.0%} of raw", flush=True)
        if keep_logs:
            shutil.copytree(mesh.log_dir, keep_logs / runtime, dirs_exist_ok=True)
    return out


def main(argv: list[str] | None = None) -> pathlib.Path:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtimes", default=f"{embedder_settings().runtime},torch")
    parser.add_argument("--small", type=int, default=300, help="abstracts uploaded one per file, concurrently")
    parser.add_argument("--large", type=int, default=300, help="abstracts in the one large file")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--sweep", default="16,32",
                        help="more in-flight counts for the small uploads, first runtime only ('' for none)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="end-to-end runs per workload, first runtime (raw limits beside each block); the median is reported")
    parser.add_argument("--blocks", type=int, default=3,
                        help="consecutive blocks per round of small uploads, each between two raw runs of its chunks")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=pathlib.Path, default=None)
    parser.add_argument("--keep-logs", type=pathlib.Path, default=None, help="copy the meshes' logs (INFO) here")
    args = parser.parse_args(argv)
    from services.runtime.config import MeshSettings

    runtimes = list(dict.fromkeys(r.strip() for r in args.runtimes.split(",") if r.strip()))
    sets = corpora(args.small, args.large, args.seed, RagSettings(), MeshSettings().max_upload_bytes)
    embedder = embedder_settings()
    result: dict = {"benchmark": "ingest-seed", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                    "cpus": os.cpu_count(), "embed_threads": embedder.threads, "embed_streams": embedder.streams, "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
                    "args": {k: str(v) for k, v in vars(args).items()}, "runtimes": {}, "seeds": {}}
    seed_encode()(["warm-up"])
    with tempfile.TemporaryDirectory(prefix="docuthinker-ingest-seed-") as tmp:
        root = pathlib.Path(tmp)
        for i, runtime in enumerate(runtimes):
            sweep = tuple(int(c) for c in args.sweep.split(",") if c.strip()) if i == 0 else ()
            result["runtimes"][runtime] = run_runtime(runtime, sets, args.concurrency, root, args.keep_logs, sweep,
                                                      args.rounds if i == 0 else 1, args.blocks)
            if i == 0:  # between the runtimes, so drift hits the seeds' side as it hits them
                for name, uploads in sets.items():
                    result["seeds"][name] = seeds(uploads, root / f"seed-{name}")
                    print(f"[ingest-seed] seeds {name}: {result['seeds'][name]['docs_per_s']} docs/s", flush=True)
    for sets_out in result["runtimes"].values():
        for name, entry in sets_out.items():
            for one in entry.values() if name == "small_concurrency_sweep" else [entry]:
                seed_name = "small_concurrent" if name == "small_concurrency_sweep" else name
                one["x_seeds_docs_per_s"] = round(
                    one["end_to_end"]["docs_per_s"] / result["seeds"][seed_name]["docs_per_s"], 3)
    result["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = args.out or RESULTS / f"ingest-seed-{dt.date.today().isoformat()}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    for runtime, sets_out in result["runtimes"].items():
        for name, entry in sets_out.items():
            for label, one in entry.items() if name == "small_concurrency_sweep" else [("", entry)]:
                label = f"small, {label} in flight" if label else name
                print(f"[ingest-seed] {runtime} {label}: x{one['x_seeds_docs_per_s']} the seeds' docs/s, "
                      f"{one['share_of_raw_limit']:.0%} of the raw encode limit")
    print(f"[ingest-seed] wrote {out}")
    return out


if __name__ == "__main__":
    main()
