"""Ingestion throughput: end to end through Envoy vs plain ``model.encode`` of the same chunks.

One run (``make bench-ingest`` = ``python -m bench.ingest_bench``):
1. builds the corpora: a seeded sample of SciFact abstracts (title + " " + text, as BEIR
   indexes them), packed into a few plain-text files with one abstract per paragraph, and
   the real-world fixture documents (../shared/fixtures/docs);
2. computes the exact chunks the service will embed, with the production parsers and
   chunker and the same settings (DOCUTHINKER_RAG_* env);
3. starts the real mesh (four services and Envoy, fresh data dir), uploads every file as a
   raw REST body (``POST /v1/documents?filename=``, SSE progress) one after the other, and
   times first byte sent to last ``done`` received; reads the rag process's peak RSS and
   the per-stage times it logs for each document;
4. times ``Embedder.encode`` on exactly those chunks in this process (same model, batch size
   and device, after a warm-up) just before and just after the upload, while the mesh sits
   idle, so drifting load on a shared machine hits both sides alike;
5. writes bench/results/ingest-<date>.json; the ratio is end-to-end chunks/s over the mean of
   the two raw measurements. ``stage_ms_total`` (from the rag log) shows where the time went:
   everything but ``embed_ms`` is ingestion overhead.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import pathlib
import platform
import random
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx
import psutil

from services.models.settings import embedder_settings
from services.rag.ingest.chunking import ChunkerConfig, chunk_sections
from services.rag.ingest.formats import validate_upload
from services.rag.ingest.parsers import parse
from services.rag.runtime import pipeline_config
from services.rag.settings import RagSettings
from services.runtime.errors import DomainError

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
SCIFACT = SHARED / "data" / "scifact" / "corpus.jsonl.gz"
FIXTURES = SHARED / "fixtures" / "docs"
RESULTS = ROOT / "bench" / "results"
TENANT = {"x-tenant-id": "bench-ingest"}


@dataclass
class Upload:
    name: str
    data: bytes
    chunks: list[str] = field(default_factory=list)
    refused: str = ""
    """Reason the service refuses the file (expected), empty when it is ingested."""


@dataclass
class Corpus:
    name: str
    uploads: list[Upload]
    description: str

    @property
    def chunk_texts(self) -> list[str]:
        return [text for upload in self.uploads for text in upload.chunks]


def chunked(upload: Upload, settings: RagSettings, max_bytes: int) -> Upload:
    """Fills ``upload.chunks`` with the exact chunk texts the service will embed (or ``refused``)."""
    config = pipeline_config(settings, max_bytes)
    try:
        checked = validate_upload(upload.name, "", upload.data, max_bytes)
        parsed = parse(checked.data, checked.file_type, config.limits)
    except DomainError as exc:
        upload.refused = exc.reason
        return upload
    chunker = ChunkerConfig(settings.chunk_size, settings.chunk_overlap)
    upload.chunks = [parsed.sections[s.section_index].text[s.start : s.end] for s in chunk_sections(parsed.sections, chunker)]
    return upload


def scifact_corpus(docs: int, files: int, seed: int, settings: RagSettings, max_bytes: int) -> Corpus:
    with gzip.open(SCIFACT, "rt") as fh:
        abstracts = [(d["title"] + " " + d["text"]).strip() for d in map(json.loads, fh)]
    chosen = random.Random(seed).sample(abstracts, min(docs, len(abstracts)))
    per_file = -(-len(chosen) // files)
    uploads = [
        chunked(Upload(f"scifact-{i:02d}.txt", "\n\n".join(chosen[start : start + per_file]).encode()), settings, max_bytes)
        for i, start in enumerate(range(0, len(chosen), per_file))
    ]
    return Corpus("scifact", uploads, f"{len(chosen)} SciFact abstracts (seed {seed}) in {len(uploads)} .txt files, "
                                      "one abstract per paragraph (title + ' ' + text)")


def fixture_corpus(settings: RagSettings, max_bytes: int) -> Corpus:
    uploads = [chunked(Upload(p.name, p.read_bytes()), settings, max_bytes) for p in sorted(FIXTURES.iterdir())]
    return Corpus("fixtures", uploads, f"{len(uploads)} real-world documents of ../shared/fixtures/docs "
                                       "(refused ones are uploaded too and counted as refusals)")


class PeakRss:
    """Peak resident memory of a process: the kernel's high-water mark, sampled as a fallback."""

    def __init__(self, pid: int) -> None:
        self._process = psutil.Process(pid)
        self._pid = pid
        self.sampled = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self.sampled = max(self.sampled, self._process.memory_info().rss)
            except psutil.Error:
                return

    def high_water_mark(self) -> int:
        try:
            for line in pathlib.Path(f"/proc/{self._pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
        return self.sampled

    def stop(self) -> int:
        peak = max(self.high_water_mark(), self.sampled)
        self._stop.set()
        return peak


def _upload(client: httpx.Client, upload: Upload) -> dict:
    reply = client.post("/v1/documents", params={"filename": upload.name}, content=upload.data,
                        headers={**TENANT, "content-type": "application/octet-stream"})
    if reply.status_code != 200:
        reasons = [d.get("reason") for d in reply.json().get("details", []) if "reason" in d]
        return {"status": reply.status_code, "refused": reasons[0] if reasons else reply.text[:200]}
    events = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: ")]
    last = events[-1]
    if "done" not in last:
        raise RuntimeError(f"{upload.name}: stream ended with {last}")
    return {"status": 200, "chunks": int(last["done"]["document"]["chunk_count"]),
            "embedded_events": sum(1 for e in events if e.get("progress", {}).get("stage") == "INGEST_STAGE_EMBEDDED")}


def end_to_end(mesh, corpus: Corpus, warm: Upload) -> dict:
    log_path = mesh.log_dir / "rag.log"
    with mesh.http(timeout=3600) as client:
        _upload(client, warm)  # loads caches and torch kernels; not counted
        before = log_path.read_text(errors="replace").count('"document ingested"')
        peak = PeakRss(mesh.pids()["rag"])
        started = time.perf_counter()
        replies = [_upload(client, upload) for upload in corpus.uploads]
        seconds = time.perf_counter() - started
        rss = peak.stop()
    ingested = [r for r in replies if r["status"] == 200]
    chunks = sum(r["chunks"] for r in ingested)
    expected = len(corpus.chunk_texts)
    if chunks != expected:
        raise RuntimeError(f"{corpus.name}: the service made {chunks} chunks, the bench computed {expected}")
    refused = {u.name: r["refused"] for u, r in zip(corpus.uploads, replies, strict=True) if r["status"] != 200}
    expected_refusals = {u.name: u.refused for u in corpus.uploads if u.refused}
    if refused != expected_refusals:
        raise RuntimeError(f"{corpus.name}: refusals {refused} != expected {expected_refusals}")
    lines = log_path.read_text(errors="replace").split("\n")
    stage_lines = [ln for ln in lines if '"document ingested"' in ln][before:]
    stages: dict[str, float] = {}
    for line in stage_lines:
        entry = json.loads(line)
        for key, value in entry.items():
            if key.endswith("_ms"):
                stages[key] = round(stages.get(key, 0.0) + float(value), 1)
    return {
        "documents_uploaded": len(corpus.uploads),
        "documents_ingested": len(ingested),
        "refused": refused,
        "chunks": chunks,
        "seconds": round(seconds, 3),
        "chunks_per_s": round(chunks / seconds, 2),
        "stage_ms_total": stages,
        "unaccounted_ms": round(seconds * 1000 - sum(stages.values()), 1),
        "rag_peak_rss_mb": round(rss / 2**20, 1),
    }


def raw_encode(texts: list[str], repeats: int) -> dict:
    from services.models.embedder import get_embedder

    embedder = get_embedder()
    batch_size = embedder.batch_size
    # A worker thread, as the service's pipeline calls encode (asyncio.to_thread), so the limit is
    # measured the way the service runs (see bench/README.md on OpenMP spin-waiting).
    with ThreadPoolExecutor(max_workers=1) as worker:
        worker.submit(embedder.encode, texts[: batch_size * 2] or ["warm-up"], batch_size).result()
        runs = []
        for _ in range(repeats):
            started = time.perf_counter()
            worker.submit(embedder.encode, texts, batch_size).result()
            runs.append(time.perf_counter() - started)
    best = min(runs)
    return {"chunks": len(texts), "seconds_runs": [round(r, 3) for r in runs], "seconds": round(best, 3),
            "chunks_per_s": round(len(texts) / best, 2), "batch_size": batch_size, "device": embedder.device,
            "thread": "worker", "bench_process_peak_rss_mb": round(psutil.Process().memory_info().rss / 2**20, 1)}


def main(argv: list[str] | None = None) -> pathlib.Path:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1000, help="SciFact abstracts to ingest (default 1000)")
    parser.add_argument("--files", type=int, default=10, help="text files the abstracts are packed into")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--raw-repeats", type=int, default=1, help="raw encode runs (the fastest counts)")
    parser.add_argument("--skip-fixtures", action="store_true")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args(argv)

    from services.launcher.mesh import Mesh
    from services.runtime.config import MeshSettings

    settings = RagSettings()
    max_bytes = MeshSettings().max_upload_bytes
    corpora = [scifact_corpus(args.docs, args.files, args.seed, settings, max_bytes)]
    if not args.skip_fixtures:
        corpora.append(fixture_corpus(settings, max_bytes))
    warm = Upload("warm-up.txt", b"A short warm-up document, not counted. " * 40)

    results: dict = {
        "benchmark": "ingest",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_avg_at_start": [round(x, 2) for x in os.getloadavg()]},
        "settings": {"chunk_size": settings.chunk_size, "chunk_overlap": settings.chunk_overlap,
                     "embed_batch_size": embedder_settings().batch_size or "the runtime's best",
                     "embed_progress_every": settings.embed_progress_every},
        "corpora": {},
    }
    with tempfile.TemporaryDirectory(prefix="docuthinker-ingest-bench-") as tmp:
        root = pathlib.Path(tmp)
        with Mesh(data_dir=root / "data", log_dir=root / "logs", auto_ports=True,
                  extra_env={"DOCUTHINKER_LOG_LEVEL": "INFO"}) as mesh:
            for corpus in corpora:
                texts = corpus.chunk_texts
                print(f"[ingest-bench] {corpus.name}: raw encode of {len(texts)} chunks", flush=True)
                before = raw_encode(texts, args.raw_repeats)
                print(f"[ingest-bench] {corpus.name}: uploading {len(corpus.uploads)} files through Envoy", flush=True)
                e2e = end_to_end(mesh, corpus, warm)
                time.sleep(3)  # let the background BM25 rebuild finish before timing again
                print(f"[ingest-bench] {corpus.name}: raw encode again", flush=True)
                after = raw_encode(texts, args.raw_repeats)
                raw_cps = (before["chunks_per_s"] + after["chunks_per_s"]) / 2
                embed_s = e2e["stage_ms_total"].get("embed_ms", 0.0) / 1000
                results["corpora"][corpus.name] = {
                    "description": corpus.description,
                    "end_to_end": e2e,
                    "raw_encode_before": before,
                    "raw_encode_after": after,
                    "raw_chunks_per_s_mean": round(raw_cps, 2),
                    "ratio_end_to_end_over_raw": round(e2e["chunks_per_s"] / raw_cps, 3),
                    "share_of_time_outside_embedding": round(1 - embed_s / e2e["seconds"], 4),
                }
                results["corpora"][corpus.name]["goal_met"] = results["corpora"][corpus.name][
                    "ratio_end_to_end_over_raw"] >= 0.85
    results["machine"]["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]

    RESULTS.mkdir(parents=True, exist_ok=True)
    out = args.out or RESULTS / f"ingest-{dt.date.today().isoformat()}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    for name, entry in results["corpora"].items():
        e2e = entry["end_to_end"]
        print(f"[ingest-bench] {name}: end to end {e2e['chunks_per_s']} chunks/s, raw encode "
              f"{entry['raw_chunks_per_s_mean']} chunks/s, ratio {entry['ratio_end_to_end_over_raw']}, "
              f"outside embedding {entry['share_of_time_outside_embedding']:.1%}, "
              f"rag peak RSS {e2e['rag_peak_rss_mb']} MB")
    print(f"[ingest-bench] wrote {out}")
    return out


if __name__ == "__main__":
    main()
