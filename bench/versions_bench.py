"""Versions and sources: what re-indexing a changed document and re-syncing a changed folder cost.

1. A document of about 500 chunks (SciFact abstracts as Markdown sections, real text) is uploaded under a name;
   three passages far apart are edited and the file is uploaded again: its chunks re-embedded and the time,
   against a full re-index of the same file (``ReindexDocument``: every chunk embedded again).
2. A folder of 200 files (one abstract each) is synced as a source; then 10 files change, 5 are deleted and 5
   added, and it is synced again: the second sync's time and work (files fetched, documents uploaded, chunks
   embedded) against the first; a third sync with nothing changed.

Everything runs in process on the production pipeline, stores (embedded backend) and embedder
(``DOCUTHINKER_EMBED_RUNTIME``, int8 ONNX by default). Rounds alternate the two sides of each comparison and
the median is reported (the machine is shared: compare within one run).

    python -m bench.versions_bench [--rounds 3] [--out bench/results/versions-<date>.json]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import pathlib
import random
import shutil
import statistics
import tempfile
import time

from bench import environment
from bench.scifact import load
from services.rag.documents import IngestOutcome
from services.rag.runtime import RagRuntime
from services.rag.settings import RagSettings
from services.rag.sources.connect import Connectors
from services.rag.sources.engine import SyncEngine
from services.rag.sources.model import SourceKind
from services.rag.sources.secrets import CredentialBox
from services.rag.sources.service import SourceDraft, SourceService
from services.rag.sources.settings import SourcesSettings
from services.rag.sources.store import SqliteSourceStore
from services.runtime import domain_metrics
from services.storage.settings import StorageSettings

TENANT = "bench"


def embedded_so_far() -> float:
    return domain_metrics.CHUNKS_EMBEDDED._value.get()


def big_document(abstracts: list[str], target_chunks: int = 500) -> str:
    """Markdown sections of abstracts, long enough for about ``target_chunks`` chunks at the default size."""
    parts, size = ["# Collected abstracts\n"], 0
    for i, text in enumerate(abstracts):
        parts.append(f"## Abstract {i + 1}\n\n{text}\n")
        size += len(text)
        if size > target_chunks * 620:
            break
    return "\n".join(parts)


def edit(text: str, places: int = 3, seed: int = 7) -> str:
    """The document with one sentence rewritten in ``places`` sections far apart."""
    sections = text.split("\n## ")
    rng = random.Random(seed)
    picks = sorted(rng.sample(range(1, len(sections)), places))
    for index in picks:
        sentences = sections[index].split(". ")
        sentences[len(sentences) // 2] = "This sentence was revised in the second version of the collection"
        sections[index] = ". ".join(sentences)
    return "\n## ".join(sections)


async def upload(runtime: RagRuntime, name: str, text: str, key: str) -> tuple[IngestOutcome, float]:
    started = time.perf_counter()
    outcome = None
    async for event in runtime.pipeline.upload(TENANT, name, "text/markdown", text.encode(), key=key):
        if isinstance(event, IngestOutcome):
            outcome = event
    assert outcome is not None
    return outcome, time.perf_counter() - started


async def document_round(runtime: RagRuntime, v1: str, v2: str, round_no: int) -> dict:
    key = f"collection-{round_no}.md"
    first, first_s = await upload(runtime, key, v1, key)
    before = embedded_so_far()
    second, second_s = await upload(runtime, key, v2, key)
    version_chunks = embedded_so_far() - before
    before = embedded_so_far()
    started = time.perf_counter()
    await runtime.pipeline.reindex(TENANT, second.document.document_id)
    reindex_s = time.perf_counter() - started
    reindex_chunks = embedded_so_far() - before
    return {
        "chunks": second.document.chunk_count, "first_upload_s": round(first_s, 3),
        "new_version_s": round(second_s, 3), "new_version_chunks_embedded": int(version_chunks),
        "new_version_chunks_reused": second.chunks_reused,
        "full_reindex_s": round(reindex_s, 3), "full_reindex_chunks_embedded": int(reindex_chunks),
        "time_ratio": round(second_s / reindex_s, 4),
    }


async def folder_round(runtime: RagRuntime, root: pathlib.Path, abstracts: list[str], round_no: int) -> dict:
    folder = root / f"folder-{round_no}"
    folder.mkdir(parents=True)
    for i in range(200):
        (folder / f"abstract-{i:03d}.md").write_text(f"# Abstract {i}\n\n{abstracts[i]}\n")
    settings = SourcesSettings(folder_roots=[root])
    store = SqliteSourceStore(root / f"sources-{round_no}.sqlite3")
    box = CredentialBox(b"\x00" * 32)
    connectors = Connectors(settings, box, [root], root / "cache")
    engine = SyncEngine(store, runtime.pipeline, runtime.catalog, settings)
    service = SourceService(store, runtime.catalog, box, connectors, settings)
    view = await service.create(TENANT, SourceDraft(name=f"folder {round_no}", kind=SourceKind.FOLDER,
                                                    config={"path": str(folder)}))
    source_id = view.record.source_id

    async def sync() -> dict:
        await service.sync(TENANT, source_id)
        claimed = store.claim_due()
        before = embedded_so_far()
        started = time.perf_counter()
        await engine.sync(claimed, connectors.open(claimed), _NoLease())
        seconds = time.perf_counter() - started
        record = (await service.get(TENANT, source_id)).record
        counts = record.counts
        return {"seconds": round(seconds, 3), "state": record.state.name, "seen": counts.seen, "added": counts.added,
                "changed": counts.changed, "unchanged": counts.unchanged, "deleted": counts.deleted,
                "failed": counts.failed, "uploaded": counts.added + counts.changed,
                "chunks_embedded": int(embedded_so_far() - before)}

    first = await sync()
    rng = random.Random(round_no)
    names = sorted(p.name for p in folder.iterdir())
    changed, deleted = rng.sample(names, 15)[:10], rng.sample(names, 15)[10:]
    for name in changed:
        with (folder / name).open("a") as handle:
            handle.write("\nA note added in the second week of the review.\n")
    for name in set(deleted) - set(changed):
        (folder / name).unlink()
    for i in range(5):
        (folder / f"new-{round_no}-{i}.md").write_text(f"# New abstract {i}\n\n{abstracts[200 + i]}\n")
    second = await sync()
    third = await sync()
    store.close()
    return {"first_sync": first, "second_sync": second, "unchanged_sync": third,
            "time_ratio": round(second["seconds"] / first["seconds"], 4),
            "chunk_ratio": round(second["chunks_embedded"] / max(first["chunks_embedded"], 1), 4)}


class _NoLease:
    def check(self) -> None:
        return None

    def settle(self) -> None:
        return None


async def run(rounds: int, out: pathlib.Path) -> dict:
    from services.models.embedder import get_embedder

    corpus, _, _ = load()
    abstracts = [t for t in corpus.values() if len(t) > 600]
    embedder = get_embedder()
    root = pathlib.Path(tempfile.mkdtemp(prefix="versions-bench-"))
    runtime = RagRuntime.open(root / "data", RagSettings(keyword_refresh_delay_s=5.0), 64 * 1024 * 1024, embedder,
                              storage=StorageSettings())
    v1 = big_document(abstracts)
    v2 = edit(v1)
    documents, folders = [], []
    try:
        await upload(runtime, "warm-up.md", "# Warm up\n\nA short text to load the model.", "warm-up")
        for round_no in range(rounds):
            documents.append(await document_round(runtime, v1, v2, round_no))
            folders.append(await folder_round(runtime, root / "folders", abstracts[round_no * 300:], round_no))
            print(json.dumps({"round": round_no, "document": documents[-1], "folder": folders[-1]}), flush=True)
    finally:
        await runtime.close()
        shutil.rmtree(root, ignore_errors=True)

    def median(rows, *path):
        values = []
        for row in rows:
            for part in path:
                row = row[part]
            values.append(row)
        return statistics.median(values)

    result = {
        "benchmark": "versions", "date": dt.date.today().isoformat(), "rounds": rounds,
        "environment": environment.describe(), "note": "shared 2-core machine: compare within this run",
        "document": {
            "chunks": documents[0]["chunks"], "edits": 3,
            "new_version_chunks_embedded": median(documents, "new_version_chunks_embedded"),
            "new_version_s": median(documents, "new_version_s"),
            "full_reindex_chunks_embedded": median(documents, "full_reindex_chunks_embedded"),
            "full_reindex_s": median(documents, "full_reindex_s"),
            "time_ratio": median(documents, "time_ratio"),
            "rounds": documents,
        },
        "folder": {
            "files": 200, "changed": 10, "deleted": 5, "added": 5,
            "first_sync_s": median(folders, "first_sync", "seconds"),
            "second_sync_s": median(folders, "second_sync", "seconds"),
            "unchanged_sync_s": median(folders, "unchanged_sync", "seconds"),
            "first_chunks_embedded": median(folders, "first_sync", "chunks_embedded"),
            "second_chunks_embedded": median(folders, "second_sync", "chunks_embedded"),
            "second_uploaded": median(folders, "second_sync", "uploaded"),
            "time_ratio": median(folders, "time_ratio"),
            "chunk_ratio": median(folders, "chunk_ratio"),
            "rounds": folders,
        },
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=pathlib.Path,
                        default=pathlib.Path("bench/results") / f"versions-{dt.date.today().isoformat()}.json")
    args = parser.parse_args()
    result = asyncio.run(run(args.rounds, args.out))
    d, f = result["document"], result["folder"]
    print(f"document of {d['chunks']} chunks, 3 edits: new version embedded {d['new_version_chunks_embedded']} chunks "
          f"in {d['new_version_s']} s; full re-index {d['full_reindex_chunks_embedded']} chunks in "
          f"{d['full_reindex_s']} s (time ratio {d['time_ratio']})")
    print(f"folder of 200: first sync {f['first_sync_s']} s ({f['first_chunks_embedded']} chunks); after 10 changed, "
          f"5 deleted, 5 added: {f['second_sync_s']} s ({f['second_uploaded']} uploads, {f['second_chunks_embedded']} "
          f"chunks; ratio {f['time_ratio']}); unchanged: {f['unchanged_sync_s']} s")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
