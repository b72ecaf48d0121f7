"""First vs next question on a freshly uploaded document, with and without the sentence warm-up.

In process, production pieces: ``RagRuntime`` (real stores in a temporary directory), the
process embedder (``DOCUTHINKER_EMBED_RUNTIME``), ``build_answering`` sharing one sentence cache
with ``SentenceWarmer``. For each of a few SQuAD dev articles: upload it as a fresh document in
its own tenant, let the warm-up finish (the "warm" arm; the "cold" arm leaves it unhooked), then
time one question (the first on the document) and another question (the next). Both arms
alternate article by article on the same shared machine; ratios are the figures to read.

Usage: python -m bench.first_question_bench [--articles 6]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import pathlib
import statistics
import tempfile
import time

from bench import squad
from services.models.embedder import get_embedder
from services.providers.router import Router
from services.providers.settings import ProviderSettings
from services.rag.answers import spans
from services.rag.answers.settings import AnswerSettings
from services.rag.answers.setup import build_answering
from services.rag.answers.vectors import CachedEncoder
from services.rag.runtime import RagRuntime
from services.rag.sentence_warmup import SentenceWarmer
from services.rag.settings import RagSettings
from services.storage.settings import StorageSettings

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


async def one(runtime: RagRuntime, embedder, tenant: str, text: str, questions: list[str], warm: bool) -> dict:
    for cached in (spans.entities, spans.entity_spans):  # process-wide caches: one arm must not warm the other
        cached.cache_clear()
    cache = CachedEncoder(embedder)
    warmer = SentenceWarmer(cache, busy=lambda: runtime.pipeline.busy, analyse=spans.warm)
    runtime.pipeline.on_indexed = warmer.notify if warm else (lambda texts: None)
    answers, _ = build_answering(runtime.index, runtime.metadata, embedder, AnswerSettings(),
                                 Router.from_settings(ProviderSettings()), sentence_cache=cache)
    async for _ in runtime.pipeline.upload(tenant, f"{tenant}.txt", "text/plain", text.encode()):
        pass
    started = time.perf_counter()
    await warmer.drain()
    warm_up_s = time.perf_counter() - started
    times = []
    for question in questions[:2]:
        started = time.perf_counter()
        await answers.answer(tenant, question)
        times.append(time.perf_counter() - started)
    return {"first_s": times[0], "next_s": times[1], "warm_up_s": warm_up_s}


async def run(articles: int) -> dict:
    texts, questions = squad.load()
    by_article: dict[str, list[str]] = {}
    for q in questions:
        if q.answerable:
            by_article.setdefault(q.article, []).append(q.text)
    chosen = [a for a in sorted(by_article) if len(by_article[a]) >= 2][:articles]
    embedder = get_embedder()
    embedder.encode(["warm the model up"])
    spans.warm(())  # spaCy loaded once, as the rag service now does at startup (both arms alike)
    arms: dict[str, list[dict]] = {"warm": [], "cold": []}
    with tempfile.TemporaryDirectory() as tmp:
        runtime = RagRuntime.open(pathlib.Path(tmp), RagSettings(keyword_refresh_delay_s=0.0), 64 << 20, embedder,
                                  storage=StorageSettings(store_backend="embedded"))
        try:
            for i, article in enumerate(chosen):
                for arm in ("warm", "cold"):  # alternating: drifting load hits both arms alike
                    arms[arm].append(await one(runtime, embedder, f"{arm}-{i}", texts[article],
                                               by_article[article], arm == "warm"))
        finally:
            await runtime.close()
    out = {"date": dt.date.today().isoformat(), "articles": len(chosen),
           "runtime": getattr(embedder, "runtime", "?"), "note": "shared noisy machine; medians over articles"}
    for arm, rows in arms.items():
        first = statistics.median(r["first_s"] for r in rows)
        nxt = statistics.median(r["next_s"] for r in rows)
        out[arm] = {"first_ms": round(first * 1000), "next_ms": round(nxt * 1000),
                    "first_over_next": round(first / nxt, 2),
                    "warm_up_s": round(statistics.median(r["warm_up_s"] for r in rows), 2),
                    "per_article": [{k: round(v, 3) for k, v in r.items()} for r in rows]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=6)
    args = parser.parse_args()
    result = asyncio.run(run(args.articles))
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"first-question-{result['date']}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k in ("warm", "cold")}, indent=2, default=str)[:3000])
    print(f"written to {path}")


if __name__ == "__main__":
    main()
