"""Answers over real documents: the docqa dev set (../shared/data/docqa), end to end.

``make bench-docqa`` (= ``python -m bench.docqa_bench``):
1. starts the real mesh (four services and Envoy; free ports, a temporary data directory);
2. uploads every file ``dev.json`` names plus the other fixtures of ../shared/fixtures/docs (the
   two bad-input ones excluded) as raw REST bodies through Envoy, as one tenant's library;
3. asks every question with ``POST /v1/query`` and no document filter; one warm-up question
   first (not counted), then each question timed from request to full reply;
4. scores with the set's matching rule (``bench.docqa_score``) and writes
   bench/results/docqa-<date>.json and .md: answered-correct, citation hit, answered rate,
   abstention on unanswerable items, p50/p95 latency, per kind and per tag, and every item.

``--in-process`` runs the same production code (parsers, chunker, stores, ``AnswerService``)
in this process without the mesh: a fast loop for development, same scoring; its latencies
are not the REST ones.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import pathlib
import platform
import tempfile
import time
from collections.abc import Callable, Sequence

import httpx

from bench.docqa_score import Cited, Item, Reply, breakdown, goals, markdown, outcome_rows, score

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DOCQA = SHARED / "data" / "docqa" / "dev.json"
FIXTURES = SHARED / "fixtures" / "docs"
RESULTS = ROOT / "bench" / "results"
BAD_INPUTS = frozenset({"encrypted-r6-user-password.pdf", "bad_dimensions.xlsx"})
TENANT = "bench-docqa"
WARM_UP = "What is this document about?"


def load_items(path: pathlib.Path = DOCQA) -> list[Item]:
    return [Item.from_json(raw) for raw in json.loads(path.read_text())]


def library(items: Sequence[Item], fixtures: pathlib.Path = FIXTURES) -> list[pathlib.Path]:
    """Every file the set names, then the other fixtures (bad inputs left out)."""
    named = [fixtures / name for name in dict.fromkeys(i.file for i in items)]
    missing = [p.name for p in named if not p.exists()]
    if missing:
        raise SystemExit(f"docqa names files missing from {fixtures}: {missing}")
    others = sorted(p for p in fixtures.iterdir() if p.is_file() and p not in named and p.name not in BAD_INPUTS)
    return named + others


def reply_from_json(answer: dict, seconds: float) -> Reply:
    cited = tuple(Cited(c.get("filename", ""), int(c.get("page", 0)), c.get("sheet_name", ""), c.get("excerpt", ""),
                        c.get("row_label", ""), c.get("column_header", "")) for c in answer.get("citations", []))
    return Reply(answer.get("answer", ""), answer.get("support_status", ""), cited, seconds)


def reply_from_domain(answer, seconds: float) -> Reply:
    cited = tuple(Cited(c.chunk.provenance.filename, c.chunk.provenance.page, c.chunk.provenance.sheet_name, c.excerpt,
                        getattr(c, "row_label", ""), getattr(c, "column_header", "")) for c in answer.citations)
    return Reply(answer.answer, answer.support_status.name, cited, seconds)


def ask_all(items: Sequence[Item], ask: Callable[[str], Reply], log: Callable[[str], None] = print) -> list:
    ask(WARM_UP)
    outcomes = []
    for item in items:
        outcome = score(item, ask(item.question))
        outcomes.append(outcome)
        log(f"[docqa] {item.id} {'OK ' if outcome.correct else 'BAD'} {outcome.seconds:.2f}s {item.question[:60]!r} "
            f"-> {outcome.answer[:90]!r}")
    return outcomes


# -- through the mesh -------------------------------------------------------------------------------
def upload(client: httpx.Client, path: pathlib.Path) -> dict:
    reply = client.post("/v1/documents", params={"filename": path.name}, content=path.read_bytes(),
                        headers={"x-tenant-id": TENANT, "content-type": "application/octet-stream"})
    if reply.status_code != 200:
        return {"file": path.name, "status": reply.status_code, "error": reply.text[:300]}
    events = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: ")]
    last = events[-1] if events else {}
    if "done" not in last:
        return {"file": path.name, "status": 200, "error": json.dumps(last)[:300]}
    return {"file": path.name, "status": 200, "chunks": int(last["done"]["document"].get("chunk_count", 0))}


def run_mesh(items: Sequence[Item], files: Sequence[pathlib.Path]) -> tuple[list, list[dict]]:
    from services.launcher.mesh import Mesh

    with tempfile.TemporaryDirectory(prefix="docuthinker-docqa-") as tmp:
        root = pathlib.Path(tmp)
        with Mesh(data_dir=root / "data", log_dir=root / "logs", auto_ports=True) as mesh, \
                mesh.http(timeout=600) as client:
            uploads = []
            for path in files:
                started = time.perf_counter()
                uploads.append({**upload(client, path), "seconds": round(time.perf_counter() - started, 2)})
                print(f"[docqa] uploaded {uploads[-1]}", flush=True)
            time.sleep(2)  # the keyword index refreshes in the background after the last upload

            def ask(question: str) -> Reply:
                started = time.perf_counter()
                reply = client.post("/v1/query", json={"question": question}, headers={"x-tenant-id": TENANT})
                seconds = time.perf_counter() - started
                reply.raise_for_status()
                return reply_from_json(reply.json()["answer"], seconds)

            return ask_all(items, ask), uploads


# -- in process -------------------------------------------------------------------------------------
def run_in_process(items: Sequence[Item], files: Sequence[pathlib.Path]) -> tuple[list, list[dict]]:
    from bench.corpus import DiskCachedEncoder
    from bench.docqa_corpus import DocumentCorpus

    encoder = DiskCachedEncoder("docqa")
    corpus = DocumentCorpus(encoder)
    try:
        uploads = corpus.add_files(files)
        service = corpus.answer_service()

        def ask(question: str) -> Reply:
            started = time.perf_counter()
            answer = asyncio.run(service.answer(corpus.TENANT, question))
            return reply_from_domain(answer, time.perf_counter() - started)

        outcomes = ask_all(items, ask)
        encoder.save()
        return outcomes, uploads
    finally:
        corpus.close()


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--in-process", action="store_true", help="production code in this process, no mesh")
    parser.add_argument("--data", type=pathlib.Path, default=DOCQA)
    parser.add_argument("--out", type=pathlib.Path, default=RESULTS)
    parser.add_argument("--suffix", default="", help="added to the result file name")
    args = parser.parse_args(argv)
    items = load_items(args.data)
    # docqa2 keeps its documents beside its questions; docqa's are the shared fixtures.
    files = library(items, args.data.parent / "docs" if (args.data.parent / "docs").is_dir() else FIXTURES)
    started = time.perf_counter()
    outcomes, uploads = (run_in_process if args.in_process else run_mesh)(items, files)
    mode = "in-process" if args.in_process else "mesh-rest"
    results = {
        "benchmark": "docqa",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "mode": mode,
        "description": (f"{len(items)} docqa dev questions over a library of {len(files)} fixture documents "
                        f"({'production code in process' if args.in_process else 'uploaded and asked through Envoy REST'}"
                        ", no document filter); scored by the docqa README matching rule. Latency on a shared "
                        "2-core machine: noisy."),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_avg": [round(x, 2) for x in os.getloadavg()]},
        "uploads": uploads,
        **breakdown(outcomes),
        "seconds": round(time.perf_counter() - started, 1),
        "items": outcome_rows(outcomes),
    }
    results["goals"] = goals(results["overall"])
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"docqa-{dt.date.today().isoformat()}{'-in-process' if args.in_process else ''}{args.suffix}"
    (args.out / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / f"{stem}.md").write_text(markdown(results))
    print(json.dumps({"overall": results["overall"], "goals": results["goals"]}, indent=2))
    print(f"[docqa] wrote {args.out / stem}.json / .md")
    return results


if __name__ == "__main__":
    main()
