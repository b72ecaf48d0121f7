"""Batched embedding of a document's chunks, longest first, with progress after each group.

Sorting by length keeps padding low inside each forward pass; vectors are put back in chunk
order. Each group is one ``encode`` call off the event loop: an embedder that queues its work
(``submit``, the micro-batcher) is awaited as a future, so uploads waiting for a shared forward
pass do not hold the loop's worker threads that other uploads' parsing and storage need
(profiled: 8 uploads in flight left the forward pass idle a fifth of the time); any other runs in
a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Protocol

import numpy as np


class TextEmbedder(Protocol):
    """What ingestion needs from an embedding model (``services.models.embedder.Embedder`` fits)."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray: ...


async def encode_off_loop(embedder: TextEmbedder, texts: list[str]) -> np.ndarray:
    """``embedder.encode(texts)`` without blocking the event loop, nor a worker thread where it can be helped."""
    submit = getattr(embedder, "submit", None)
    if submit is not None:
        return await asyncio.wrap_future(submit(texts))
    return await asyncio.to_thread(embedder.encode, texts)


async def embed_in_groups(
    embedder: TextEmbedder, texts: Sequence[str], group_size: int, out: np.ndarray
) -> AsyncIterator[int]:
    """Fills ``out`` (len(texts) x dimension) and yields the number of texts embedded so far; the embedder
    cuts each group into forward passes of its own batch size (``DOCUTHINKER_EMBED_BATCH_SIZE``)."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
    done = 0
    for start in range(0, len(order), group_size):
        rows = order[start : start + group_size]
        vectors = await encode_off_loop(embedder, [texts[i] for i in rows])
        if vectors.shape != (len(rows), out.shape[1]):
            raise RuntimeError(f"embedder returned {vectors.shape}, expected {(len(rows), out.shape[1])}")
        out[rows] = vectors
        done += len(rows)
        yield done
