"""What parsing in worker processes costs ordinary documents: the pool against this process, side by side.

Every fixture document of ``../shared/fixtures/docs`` (PDF, DOCX, XLSX, CSV, HTML, Markdown, text: real
files, 25 of them) is parsed through the production entry point both ways, alternating per round so the
machine's drift falls on both alike:

- in process: ``parse_guard.parse_or_refuse`` in a thread, as with ``DOCUTHINKER_RAG_PARSER_ISOLATION=0``;
- in a worker: ``ParserPool.parse`` (one warm worker, the job and its result pickled over a socket).

Each round parses the whole set one document at a time; the median round is reported, with the
per-document median of the extra wall time of the hop. The PDF page pre-scan (``content_budget``)
is timed on its own, since it runs in both modes. Workers are started before the first round (their
start-up is reported apart: the pool keeps them warm between documents).

    python -m bench.parser_isolation_bench [--rounds 7]

Writes bench/results/parser-isolation-<date>.json and prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import pathlib
import statistics
import time

from bench.environment import describe
from services.rag.ingest.formats import detect_type
from services.rag.ingest.parse_guard import parse_or_refuse
from services.rag.ingest.parser_pool import ParserPool, ParserPoolConfig
from services.rag.ingest.parser_worker import ParseJob
from services.rag.ingest.parsers.limits import ParseLimits
from services.rag.ingest.parsers.pdf.content_budget import check_content_budget
from services.runtime.errors import DomainError

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "docs"
RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def documents() -> list[tuple[str, object, bytes]]:
    found = []
    for path in sorted(FIXTURES.iterdir()):
        try:
            file_type = detect_type(path.name, "")
            parse_or_refuse(path.read_bytes(), file_type, ParseLimits(), path.name)
        except DomainError:
            continue  # encrypted, or a scan needing OCR: not an ordinary document
        found.append((path.name, file_type, path.read_bytes()))
    return found


async def run(rounds: int) -> dict:
    docs = documents()
    limits = ParseLimits()
    pool = ParserPool(ParserPoolConfig(workers=1))
    started = time.perf_counter()
    await asyncio.to_thread(pool.warm)
    warm_s = time.perf_counter() - started
    for name, file_type, data in docs:  # first parses (lazy imports) in both before timing
        await pool.parse(ParseJob(file_type, data, limits, name))
    inproc_rounds, worker_rounds, prescan_rounds = [], [], []
    extra: dict[str, list[float]] = {name: [] for name, _, _ in docs}
    for _ in range(rounds):
        inproc_total = worker_total = prescan_total = 0.0
        for name, file_type, data in docs:
            t0 = time.perf_counter()
            local = await asyncio.to_thread(parse_or_refuse, data, file_type, limits, name)
            t1 = time.perf_counter()
            remote = await pool.parse(ParseJob(file_type, data, limits, name))
            t2 = time.perf_counter()
            assert local == remote, name
            inproc_total += t1 - t0
            worker_total += t2 - t1
            extra[name].append((t2 - t1) - (t1 - t0))
            if file_type.value == "pdf":
                t3 = time.perf_counter()
                check_content_budget(data, limits)
                prescan_total += time.perf_counter() - t3
        inproc_rounds.append(inproc_total)
        worker_rounds.append(worker_total)
        prescan_rounds.append(prescan_total)
    pool.close()
    inproc, worker = statistics.median(inproc_rounds), statistics.median(worker_rounds)
    return {
        "benchmark": "parser_isolation",
        "date": dt.date.today().isoformat(),
        "environment": describe(),
        "note": "2 shared cores (other agents' work ran meanwhile): compare the ratio, not the seconds",
        "documents": len(docs),
        "bytes": sum(len(d) for _, _, d in docs),
        "rounds": rounds,
        "worker_start_s": round(warm_s, 3),
        "workers_started": pool.started,
        "in_process_s_per_round": round(inproc, 4),
        "worker_s_per_round": round(worker, 4),
        "ratio_worker_to_in_process": round(worker / inproc, 3),
        "hop_ms_per_document_median": round(statistics.median(
            statistics.median(v) for v in extra.values()) * 1000, 2),
        "pdf_prescan_s_per_round": round(statistics.median(prescan_rounds), 4),
        "rounds_in_process_s": [round(v, 4) for v in inproc_rounds],
        "rounds_worker_s": [round(v, 4) for v in worker_rounds],
        "per_document_extra_ms": {k: round(statistics.median(v) * 1000, 2) for k, v in extra.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    result = asyncio.run(run(args.rounds))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"parser-isolation-{result['date']}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
