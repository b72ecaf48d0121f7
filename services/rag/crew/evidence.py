"""What the crew's tools return, and the two ports they read from.

``EvidenceSearch`` is the RAG service's own hybrid retrieval (the crew runs inside the RAG
service, so it is called in process: no loopback hop through the server's interceptors and
serialisation, and the tenant is passed explicitly rather than trusted from a header).
``TopicSource`` is the NLP service's ExtractTopics (``services.clients.nlp.NlpClient``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from services.clients.nlp import Topic
from services.rag.retrieval import RetrievedChunk


@dataclass(frozen=True)
class Snippet:
    """One search hit in the seed's shape ``{source, page, snippet}``, plus its provenance ids and the hit
    itself (its chunk's exact span of the document, for the citation of an answer that rests on it)."""

    source: str
    page: int
    snippet: str
    document_id: str
    chunk_id: str
    hit: RetrievedChunk | None = field(default=None, compare=False, repr=False)


class EvidenceSearch(Protocol):
    async def search(self, tenant: str, query: str, top_k: int, document_ids: Sequence[str]) -> list[RetrievedChunk]:
        """Tenant-scoped hybrid retrieval, best first."""
        ...


class TopicSource(Protocol):
    async def topics(self, text: str, limit: int) -> list[Topic]:
        """Weighted keyphrases of ``text``, heaviest first."""
        ...


def clip(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters, cut at a word boundary."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit)
    return flat[: cut if cut > limit // 2 else limit].rstrip(" ,;:") + " ..."


def snippets(hits: Sequence[RetrievedChunk], limit: int) -> list[Snippet]:
    return [
        Snippet(h.chunk.provenance.filename, h.chunk.provenance.page, clip(h.chunk.text, limit),
                h.chunk.document_id, h.chunk.chunk_id, h)
        for h in hits
    ]


def search_json(found: Sequence[Snippet]) -> str:
    """The tool's answer to an agent: ``[{source, page, snippet}]``."""
    return json.dumps([{"source": s.source, "page": s.page, "snippet": s.snippet} for s in found])


def topics_json(found: Sequence[Topic]) -> str:
    return json.dumps([{"topic": t.name, "weight": round(t.weight, 3)} for t in found])


def evidence_lines(found: Sequence[Snippet]) -> str:
    """Numbered evidence for a prompt: ``[1] (p.2) ...``. No file names: the small local model
    copies whatever precedes a passage into its answer."""
    return "\n".join(
        f"[{i}] {f'(p.{s.page}) ' if s.page else ''}{s.snippet}" for i, s in enumerate(found, 1)
    ) or "(no passages found)"
