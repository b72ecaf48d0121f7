"""The sentence-vector cache is filled from a new document's chunks, so its first question is warm."""

from __future__ import annotations

import asyncio

from services.rag.answers.sentences import split_sentences
from services.rag.answers.vectors import CachedEncoder
from services.rag.sentence_warmup import SentenceWarmer

from .fakes import HashEmbedder
from .probes import collect

TEXT = "\n\n".join(
    f"Site {i} report. Turbine blades at site {i} are inspected every six months. The crew logged {i} findings."
    for i in range(30)
)


async def test_an_indexed_document_leaves_its_sentences_cached(open_runtime) -> None:
    runtime = open_runtime()
    model = HashEmbedder()
    cache = CachedEncoder(model)
    warmer = SentenceWarmer(cache, busy=lambda: runtime.pipeline.busy)
    runtime.pipeline.on_indexed = warmer.notify
    await collect(runtime.pipeline.upload("acme", "sites.txt", "text/plain", TEXT.encode()))
    await warmer.drain()
    chunks = runtime.index.metadata.document_chunks("acme", runtime.metadata.list_documents("acme", 1)[0].document_id)
    sentences = [s.text for c in chunks for s in split_sentences(c.text)]
    model.calls.clear()
    cache.encode(["How often are blades inspected?", *sentences])  # what answering asks for
    assert model.calls == [1]  # only the question was embedded


async def test_warm_up_waits_for_ingestion_to_go_idle() -> None:
    model = HashEmbedder()
    busy, asked = [True], []
    warmer = SentenceWarmer(CachedEncoder(model), busy=lambda: asked.append(1) or busy[0], poll_s=0.01)
    warmer.notify(["One sentence here. Another one there."])
    while len(asked) < 3:  # it has looked, and held back, a few times (counted, not timed)
        await asyncio.sleep(0.01)
    assert model.calls == []  # still ingesting: the cores belong to the embedder's ingestion work
    busy[0] = False
    await warmer.drain()
    assert model.calls == [2]


async def test_a_long_stream_of_uploads_keeps_only_the_newest_backlog(monkeypatch) -> None:
    from services.rag import sentence_warmup

    monkeypatch.setattr(sentence_warmup, "MAX_BACKLOG", 2)
    model = HashEmbedder()
    busy = [True]
    cache = CachedEncoder(model)
    warmer = SentenceWarmer(cache, busy=lambda: busy[0], poll_s=0.01)
    for word in ("first", "second", "third"):
        warmer.notify([f"The {word} document has one sentence."])
    busy[0] = False
    await warmer.drain()
    model.calls.clear()
    cache.encode(["The second document has one sentence.", "The third document has one sentence."])
    assert model.calls == []  # both newest were warmed
    cache.encode(["The first document has one sentence."])
    assert model.calls == [1]  # the oldest was skipped
