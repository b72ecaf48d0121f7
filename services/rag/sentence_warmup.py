"""Fills the answer engine's sentence-vector cache from newly indexed chunks, in the background.

Answering embeds every sentence of its evidence pool; without this the first question on a new
document pays for all of them (about 0.4 s with PyTorch on 2 cores) and the next one finds
them cached. After a document is indexed its chunks' sentences are embedded into the same cache
once ingestion and answering are idle (``busy``: they would compete with it for the cores), and, given ``analyse``, their
spaCy entities too (the larger part of the cold cost, with spaCy's first load), so the first
question costs about what the next one does. Documents with more sentences than ``max_sentences`` are warmed
only up to it, so one huge upload cannot evict every other document's vectors.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from services.rag.answers.sentences import split_sentences
from services.rag.answers.vectors import CachedEncoder

log = logging.getLogger("docuthinker.rag.warmup")

BATCH = 32
"""Sentences embedded (and analysed) per step between two looks at whether ingestion is busy."""
MAX_BACKLOG = 1000
"""Documents waiting for their warm-up; past it the oldest is skipped (it is an optimisation, never owed)."""


class SentenceWarmer:
    def __init__(self, cache: CachedEncoder, busy: Callable[[], bool] = lambda: False,
                 max_sentences: int = 10_000, poll_s: float = 0.05,
                 analyse: Callable[[Sequence[str]], None] | None = None) -> None:
        """``analyse``: also run on each batch (the service fills spaCy's entity cache with it)."""
        self._cache = cache
        self._analyse = analyse
        self._busy = busy
        self._max = max_sentences
        self._poll_s = poll_s
        self._documents: list[list[str]] = []
        self._task: asyncio.Task | None = None

    def notify(self, chunk_texts: Sequence[str]) -> None:
        """Called on the event loop when a document's chunks became searchable; the sentence split (spaCy)
        happens in the background task's worker thread, never on the loop."""
        self._documents.append(list(chunk_texts))
        if len(self._documents) > MAX_BACKLOG:  # a long stream of uploads: the oldest are the least likely asked
            del self._documents[0]
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def _sentences(self, chunk_texts: list[str]) -> list[str]:
        return list(dict.fromkeys(s.text for text in chunk_texts for s in split_sentences(text)))[: self._max]

    async def _run(self) -> None:
        while self._documents:
            await self._idle()
            try:
                sentences = await asyncio.to_thread(self._sentences, self._documents.pop(0))
            except Exception as exc:
                log.warning("sentence warm-up failed", exc_info=exc)
                continue
            # Small batches: an upload that arrives meanwhile waits for one of them at most (~0.3 s), not a document.
            for start in range(0, len(sentences), BATCH):
                await self._idle()
                batch = sentences[start : start + BATCH]
                try:
                    await asyncio.to_thread(self._cache.encode, batch)
                    if self._analyse is not None:
                        await asyncio.to_thread(self._analyse, batch)
                except Exception as exc:
                    log.warning("sentence warm-up failed", exc_info=exc)

    async def _idle(self) -> None:
        while self._busy():
            await asyncio.sleep(self._poll_s)

    async def drain(self) -> None:
        """Waits until everything notified is cached (tests, benchmarks)."""
        while self._task is not None and not self._task.done():
            await asyncio.gather(self._task, return_exceptions=True)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
