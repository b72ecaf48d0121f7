"""What the knowledge-graph sync costs per document: NLP (topics, then entities) and the graph upsert.

The RAG service's own feed (``services.rag.graph_sync.feed.mesh_feed``: the real adapters, gRPC
channels with tenant propagation) talks to the real NLP service and the real graph service
(embedded LadybugDB, a temporary directory), both served in this process on free ports. Each
fixture document is parsed with the production parsers, as the worker reads it back from the
metadata store. After a warm-up (models load), every document is synced ``--repeat`` times;
the upsert replaces the document's edges each time. Wall times depend on what else runs on the
machine (its load average is recorded); ``nlp_cpu_ms`` (CPU time of this process, all threads,
while NLP runs) is the load-independent cost.

    python -m bench.graph_sync_bench [--docs DIR] [--repeat 2] [name ...]

Writes bench/results/graph-sync-<date>.json and prints it. The worker logs the same two
numbers (``nlp_ms``, ``upsert_ms``) for every document it syncs in the running service.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import pathlib
import platform
import statistics
import tempfile
import time

from services.graph.service import binding as graph_binding
from services.graph.settings import GraphSettings
from services.nlp.service import binding as nlp_binding
from services.rag.documents import DocumentRecord, DocumentStatus, Section
from services.rag.graph_sync.feed import document_text, mesh_feed
from services.rag.graph_sync.settings import GraphSyncSettings
from services.rag.ingest.formats import validate_upload
from services.rag.ingest.parsers import ParseLimits, parse
from services.runtime import ChannelPool, MeshSettings, create_server

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "docs"
DEFAULT_DOCS = ("handbook-1p.docx", "example-10k-1p.html", "multi-column-2p.pdf", "norwich-city.txt",
                "commonmark-spec.md")
WARM_UP = "Ada Lovelace visited the Lyon turbine factory. The turbine factory builds wind turbines."


def load(path: pathlib.Path):
    upload = validate_upload(path.name, "", path.read_bytes(), 50 * 1024 * 1024)
    parsed = parse(upload.data, upload.file_type, ParseLimits())
    now = time.time()
    record = DocumentRecord(
        document_id=path.stem[:40], tenant="bench", filename=path.name, file_type=upload.file_type.value,
        content_type=upload.content_type, content_sha256="", size_bytes=len(upload.data),
        status=DocumentStatus.READY, create_time=now, update_time=now, title=parsed.title,
    )
    return record, parsed.sections


async def run(paths: list[pathlib.Path], repeat: int) -> dict:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        base = MeshSettings(data_dir=pathlib.Path(tmp))
        nlp = await create_server(nlp_binding(base, warm_up=False), base, port=0)
        graph = await create_server(graph_binding(base, GraphSettings()), base, port=0)
        mesh = MeshSettings(data_dir=pathlib.Path(tmp), nlp_port=nlp.port, graph_port=graph.port)
        settings = GraphSyncSettings()
        channels = ChannelPool(mesh)
        feed = mesh_feed(channels, settings)
        load_before = os.getloadavg()[0]
        try:
            started = time.perf_counter()
            warm = await feed.extract("bench", [Section(text=WARM_UP)])
            warm_up_s = time.perf_counter() - started
            rows = []
            for path in paths:
                record, sections = load(path)
                chars = len(document_text(sections, settings.max_text_chars))
                nlp_ms, upsert_ms, nlp_cpu_ms = [], [], []
                for _ in range(repeat):
                    t0, c0 = time.perf_counter(), time.process_time()
                    facts = await feed.extract(record.tenant, sections)
                    t1, c1 = time.perf_counter(), time.process_time()
                    await feed.publish(record, facts)
                    t2 = time.perf_counter()
                    nlp_ms.append((t1 - t0) * 1000)
                    nlp_cpu_ms.append((c1 - c0) * 1000)
                    upsert_ms.append((t2 - t1) * 1000)
                rows.append({
                    "document": path.name, "characters": chars, "topics": len(facts.topics),
                    "entities": len(facts.entities), "nlp_ms": round(statistics.median(nlp_ms), 1),
                    "nlp_cpu_ms": round(statistics.median(nlp_cpu_ms), 1),
                    "upsert_ms": round(statistics.median(upsert_ms), 1),
                    "total_ms": round(statistics.median(a + b for a, b in zip(nlp_ms, upsert_ms)), 1),
                    "runs": repeat,
                })
                print(json.dumps(rows[-1]), flush=True)
        finally:
            await feed.close()
            await channels.close()
            await nlp.stop(0)
            await graph.stop(0)
    return {
        "benchmark": "graph-sync",
        "date": dt.date.today().isoformat(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_avg_1m": {"start": round(load_before, 2), "end": round(os.getloadavg()[0], 2)}},
        "settings": {"max_topics": settings.max_topics, "max_entities": settings.max_entities,
                     "entity_labels": list(settings.entity_labels)},
        "warm_up_s": round(warm_up_s, 2),
        "warm_up_facts": {"topics": len(warm.topics), "entities": len(warm.entities)},
        "documents": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", default=list(DEFAULT_DOCS))
    parser.add_argument("--docs", type=pathlib.Path, default=FIXTURES)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    result = asyncio.run(run([args.docs / name for name in args.names], args.repeat))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"graph-sync-{result['date']}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
