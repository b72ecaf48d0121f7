"""Small fakes at the crew's and the pipeline's port boundaries (unit tests only).

Providers are faked at the router's boundary (the ``Provider`` protocol), retrieval and NLP
at theirs; CrewAI, the router, the runner and the LangGraph pipeline are the real ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from services.providers.base import GenerationRequest, GenerationResult, ProviderError, StreamEvent, TextBlock, Usage
from services.rag.crew.evidence import Topic
from services.rag.documents import Chunk
from services.rag.retrieval import RetrievedChunk
from tests.support import records

Reply = Callable[[GenerationRequest], str]

PASSAGES = (
    "The Lyon warehouse stores spare turbine blades for the northern wind farms.",
    "Inspections found corrosion on 14 blades in 2024, up from 6 in 2023.",
    "The main risk is the shortage of certified technicians: three of nine retire in 2025.",
    "A drone inspection programme starts in March 2025 and should halve inspection time.",
)


def prompt_text(request: GenerationRequest) -> str:
    system = request.system if isinstance(request.system, str) else "\n".join(b.text for b in request.system)
    turns = "\n".join(m.content if isinstance(m.content, str) else "".join(
        getattr(b, "text", "") for b in m.content) for m in request.messages)
    return system + "\n" + turns


class FakeProvider:
    """Answers with ``reply(request)``; ``fail`` raises that error instead. Usage: 10 in, 5 out per call."""

    def __init__(self, name: str, reply: Reply | None = None, fail: ProviderError | None = None,
                 model: str | None = None, stop_reason: str = "end_turn") -> None:
        self.name = name
        self.model = model or f"{name}-fake"
        self.context_window = 8192
        self.stop_reason = stop_reason
        self._reply = reply or (lambda request: f"- Answer from {name} [1].")
        self._fail = fail
        self.requests: list[GenerationRequest] = []

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        self.requests.append(request)
        if self._fail is not None:
            raise self._fail
        return GenerationResult([TextBlock(self._reply(request))], Usage(10, 5, cost_usd=0.001), self.name, self.model,
                                stop_reason=self.stop_reason)

    async def stream(self, request: GenerationRequest):
        yield StreamEvent(final=await self.generate(request))


def chunk(document_id: str, ordinal: int, text: str, tenant: str = "acme") -> Chunk:
    return records.chunk(text, tenant=tenant, document_id=document_id, ordinal=ordinal, filename="report.txt",
                         chunk_id=f"{document_id}-c{ordinal}")


class FakeSearch:
    """Every query returns the document's passages, best first; records the queries."""

    def __init__(self, passages: Sequence[str] = PASSAGES) -> None:
        self.passages = passages
        self.queries: list[tuple[str, str, tuple[str, ...]]] = []

    async def search(self, tenant: str, query: str, top_k: int, document_ids: Sequence[str]) -> list[RetrievedChunk]:
        self.queries.append((tenant, query, tuple(document_ids)))
        doc = document_ids[0]
        return [RetrievedChunk(chunk(doc, i, p, tenant), 1.0 - i / 10) for i, p in enumerate(self.passages)][:top_k]


class FakeTopics:
    def __init__(self, topics: Sequence[str] = ("turbine blades", "corrosion", "technicians")) -> None:
        self.names = topics
        self.texts: list[str] = []

    async def topics(self, text: str, limit: int) -> list[Topic]:
        self.texts.append(text)
        return [Topic(n, 1.0 - i / 10) for i, n in enumerate(self.names)][:limit]
