"""Questions that ask for a summary ("Summarize the memo.", "What is this report about?") answered with one.

Such a question is not a lookup: no single unit holds its answer, so the ranker would rightly refuse it.
The document asked about is the one the retrieved evidence is mostly from; its summary is the few
sentences closest to the centre of all its sentences (embedder cosine to their mean), each unlike the
ones already chosen (maximal marginal relevance), in document order, each cited. Long documents are
sampled evenly so a summary stays within a bounded cost.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from services.rag.answers.sentences import split_sentences
from services.rag.documents import Chunk
from services.rag.retrieval import RetrievedChunk

_ASKS = re.compile(
    r"^\s*(?:please\s+|can\s+you\s+|could\s+you\s+)?(?:summari[sz]e|sum\s+up|give\s+(?:me\s+)?(?:a\s+|an\s+)?"
    r"(?:summary|overview|gist|synopsis)|(?:write|make|provide)\s+(?:a\s+|an\s+)?(?:summary|overview)|tl;?dr)\b"
    r"|\b(?:summary|overview|gist|synopsis)\s+of\b"
    r"|^\s*what\s+(?:is|are|was)\s+(?:this|that|the|these)\s+[\w\s.-]{0,40}?\babout\s*\??\s*$"
    r"|^\s*what\s+does\s+(?:this|that|the)\s+[\w\s.-]{0,40}?\b(?:say|cover|discuss)\s*\??\s*$", re.I)
MAX_CHUNKS = 40
"""Chunks of a long document read for its summary (evenly spaced)."""
SENTENCES = 3
MIN_WORDS = 6


_ASKS_SOMETHING_ELSE = re.compile(r"^\s*(?:who|when|where|which|whose|whom|how\s+(?:many|much|long|old))\b", re.I)
"""A wh-question asks for a fact even when it names a summary ("Who wrote the overview of ...?")."""


def asks_for_summary(question: str) -> bool:
    """A request for a summary or an overview of a document, in any wording of that request."""
    text = " ".join(question.split())
    return bool(_ASKS.search(text)) and not _ASKS_SOMETHING_ELSE.search(text)


def target_document(pool: Sequence[RetrievedChunk]) -> str | None:
    """The document most of the best evidence comes from (scores of the top chunks summed per document)."""
    weight: dict[str, float] = {}
    for rank, hit in enumerate(pool[:8]):
        weight[hit.chunk.document_id] = weight.get(hit.chunk.document_id, 0.0) + 1.0 / (1 + rank)
    return max(weight, key=lambda d: weight[d]) if weight else None


def central_sentences(chunks: Sequence[Chunk], encode: Callable[[list[str]], np.ndarray],
                      count: int = SENTENCES) -> list[tuple[Chunk, int, int, str]]:
    """(chunk, start, end, text) of the document's most central, mutually distinct sentences, in order."""
    if len(chunks) > MAX_CHUNKS:
        step = len(chunks) / MAX_CHUNKS
        chunks = [chunks[int(i * step)] for i in range(MAX_CHUNKS)]
    found: list[tuple[Chunk, int, int, str]] = []
    seen: set[str] = set()
    for chunk in chunks:
        for span in split_sentences(chunk.text):
            text = " ".join(span.text.split())
            if len(text.split()) < MIN_WORDS or " | " in text or text in seen:
                continue
            seen.add(text)
            found.append((chunk, span.start, span.end, span.text))
    if not found:
        return []
    vectors = np.asarray(encode([t for *_, t in found]), dtype=float)
    centre = vectors.mean(axis=0)
    centre /= np.linalg.norm(centre) or 1.0
    relevance = vectors @ centre
    chosen: list[int] = []
    while len(chosen) < min(count, len(found)):
        redundancy = (vectors @ vectors[chosen].T).max(axis=1) if chosen else np.zeros(len(found))
        score = 0.7 * relevance - 0.3 * redundancy
        score[chosen] = -np.inf
        chosen.append(int(np.argmax(score)))
    return [found[i] for i in sorted(chosen, key=lambda i: (found[i][0].ordinal, found[i][1]))]
