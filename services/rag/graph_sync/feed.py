"""What the knowledge graph learns about a document: its text -> NLP topics and entities -> graph.

Two ports keep the transport out of the domain: ``FactExtractor`` (the NLP service's
ExtractTopics and ExtractEntities) and ``GraphWriter`` (``services.clients.graph.GraphClient``
satisfies it). ``mesh_feed`` wires both to the mesh over the service's ``ChannelPool``; every call runs
in a request context bound to the document's tenant, so the tenant, a request id and a
deadline travel with it although no RPC of a caller is in progress (the worker runs in the
background).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from services.clients.graph import GraphClient
from services.clients.nlp import NlpClient
from services.rag.documents import DocumentRecord, Section
from services.rag.graph_sync.entity_filter import clean_entities
from services.rag.graph_sync.settings import GraphSyncSettings
from services.runtime import ChannelPool, request_context
from services.runtime.errors import DomainError
from services.vocabulary.entity_resolution import MAX_NAME_CHARS, entity_key, topic_key

log = logging.getLogger("docuthinker.rag.graph")

MIN_TOPIC_WEIGHT = 1e-4
"""The graph reads a weight of 0 as "unspecified" (stored as 1): a topic NLP scored 0 stays light."""

Topic = tuple[str, float]
Entity = tuple[str, str, int]


@dataclass(frozen=True)
class DocumentFacts:
    topics: tuple[Topic, ...] = ()
    entities: tuple[Entity, ...] = ()

    def to_json(self) -> str:
        return json.dumps({"topics": [list(t) for t in self.topics], "entities": [list(e) for e in self.entities]})

    @classmethod
    def from_json(cls, text: str) -> DocumentFacts:
        data = json.loads(text)
        return cls(
            tuple((str(n), float(w)) for n, w in data["topics"]),
            tuple((str(n), str(t), int(c)) for n, t, c in data["entities"]),
        )


class FactExtractor(Protocol):
    async def topics(self, text: str, limit: int) -> Sequence[Topic]:
        """Weighted keyphrases (0..1), heaviest first."""
        ...

    async def entities(self, text: str, labels: Sequence[str]) -> Sequence[Entity]:
        """(name, label, mentions), most mentioned first; empty ``labels`` means every label."""
        ...


class GraphWriter(Protocol):
    async def upsert_document(
        self, document_id: str, title: str = "", file_type: str = "",
        topics: Sequence[Topic] = (), entities: Sequence[Entity] = (),
    ) -> Any: ...

    async def delete_document(self, document_id: str) -> Any: ...


@contextmanager
def tenant_context(tenant: str, timeout_s: float) -> Iterator[None]:
    """Binds a request context for background calls: the client interceptor sends its tenant,
    request id and deadline downstream, as it would for an RPC's own calls."""
    token = request_context.bind(request_context.RequestContext(
        request_id=f"graph-sync-{uuid.uuid4().hex[:16]}", tenant=tenant, deadline=time.monotonic() + timeout_s))
    try:
        yield
    finally:
        request_context.unbind(token)


def document_text(sections: Sequence[Section], limit: int) -> str:
    """Sections joined as paragraphs (as NLP reads a stored document), cut at ``limit`` characters,
    at a paragraph end when one lies in the last half."""
    text = "\n\n".join(s.text.strip() for s in sections if s.text.strip())
    if len(text) <= limit:
        return text
    cut = text.rfind("\n\n", 0, limit)
    return text[: cut if cut >= limit // 2 else limit]


def graph_topics(topics: Sequence[Topic], limit: int) -> tuple[Topic, ...]:
    """Topics the graph accepts (a name it can key, a finite weight), at most ``limit``."""
    kept = [
        (name.strip(), max(MIN_TOPIC_WEIGHT, min(1.0, float(weight))))
        for name, weight in topics
        if topic_key(name) and len(name.strip()) <= MAX_NAME_CHARS and math.isfinite(weight)
    ]
    return tuple(kept[:limit])


def graph_entities(entities: Sequence[Entity], limit: int) -> tuple[Entity, ...]:
    kept = [
        (name.strip(), label, max(1, int(count)))
        for name, label, count in entities
        if entity_key(name) and len(name.strip()) <= MAX_NAME_CHARS
    ]
    return tuple(kept[:limit])


class PeerHealth(Protocol):
    async def serving(self) -> bool:
        """True when every service the feed calls reports SERVING."""
        ...


class GraphFeed:
    """Extracts a document's facts and writes them to (or removes them from) the graph."""

    def __init__(
        self, extractor: FactExtractor, writer: GraphWriter, settings: GraphSyncSettings,
        peers: PeerHealth | None = None,
    ) -> None:
        self._extractor = extractor
        self._writer = writer
        self._settings = settings
        self._peers = peers

    async def peers_serving(self) -> bool:
        """Whether NLP and the graph serve again (False when no health port is wired)."""
        return self._peers is not None and await self._peers.serving()

    async def extract(self, tenant: str, sections: Sequence[Section]) -> DocumentFacts:
        text = document_text(sections, self._settings.max_text_chars)
        if not text:  # e.g. a scan without a text layer: the document node alone
            return DocumentFacts()
        # One after the other: both are CPU-heavy on the NLP service, which other callers share.
        with tenant_context(tenant, self._settings.call_timeout_s):
            topics = await self._extractor.topics(text, self._settings.max_topics)
        entities: Sequence[Entity] = ()
        if self._settings.max_entities:
            with tenant_context(tenant, self._settings.call_timeout_s):
                found = await self._extractor.entities(text, self._settings.entity_labels)
            # Off the event loop: it reads the whole text, and rag's RPCs, health and SIGTERM wait for the loop.
            entities = await asyncio.to_thread(clean_entities, found, text)
        return DocumentFacts(graph_topics(topics, self._settings.max_topics),
                             graph_entities(entities, self._settings.max_entities))

    async def publish(self, document: DocumentRecord, facts: DocumentFacts) -> None:
        with tenant_context(document.tenant, self._settings.call_timeout_s):
            await self._writer.upsert_document(
                document.document_id, document.title or document.filename, document.file_type,
                facts.topics, facts.entities,
            )

    async def remove(self, tenant: str, document_id: str) -> None:
        with tenant_context(tenant, self._settings.call_timeout_s):
            await self._writer.delete_document(document_id)

    async def close(self) -> None:
        for port in (self._extractor, self._writer, self._peers):
            closer = getattr(port, "close", None)
            if closer is not None:
                await closer()


class NlpFactExtractor:
    """``FactExtractor`` over the NLP client, with inline text (NLP fetching the text back from
    RAG would be a round trip through this very service)."""

    def __init__(self, nlp: NlpClient) -> None:
        self._nlp = nlp

    async def topics(self, text: str, limit: int) -> list[Topic]:
        return [(t.name, t.weight) for t in await self._nlp.topics(text, limit)]

    async def entities(self, text: str, labels: Sequence[str]) -> list[Entity]:
        return [(e.text, e.label, e.count) for e in await self._nlp.entities(text, labels)]


class MeshPeerHealth:
    """The standard gRPC health service of the NLP and graph services."""

    SERVICES = ("nlp", "graph")

    def __init__(self, channels: ChannelPool, timeout_s: float = 1.0) -> None:
        self._channels = channels
        self._timeout_s = timeout_s

    async def serving(self) -> bool:
        for name in self.SERVICES:
            try:
                if await self._channels.serving_status(name, self._timeout_s) != "SERVING":
                    return False
            except DomainError:
                return False
        return True


def mesh_feed(channels: ChannelPool, settings: GraphSyncSettings) -> GraphFeed:
    """The feed over the RAG service's pool (which the server closes)."""
    return GraphFeed(NlpFactExtractor(NlpClient(channels)), GraphClient(channels), settings, MeshPeerHealth(channels))
