"""Fakes at the ports of the graph feed: the extractor and writer ports (worker tests) and fake
NLP and graph *gRPC services* (service tests: the real adapters and channels talk to them)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from docuthinker.graph.v1 import graph_service_pb2 as graph_pb
from docuthinker.graph.v1 import graph_service_pb2_grpc as graph_grpc
from docuthinker.nlp.v1 import nlp_service_pb2 as nlp_pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as nlp_grpc
from services.runtime import ServiceBinding, current_tenant
from services.runtime.errors import Unavailable


def capitalised_words(text: str) -> list[str]:
    """A stand-in for NER: capitalised words after the first of a sentence, by frequency."""
    words = re.findall(r"(?<=[a-z,;] )[A-Z][a-z]+", text)
    return sorted(set(words), key=lambda w: (-words.count(w), w))


# -- ports (worker tests) ------------------------------------------------------------------
@dataclass
class FakeExtractor:
    """Derives facts from the text itself, so a test sees its document's words come back."""

    calls: list[tuple[str, str]] = field(default_factory=list)
    tenants: list[str] = field(default_factory=list)
    failure: Exception | None = None

    async def topics(self, text: str, limit: int) -> list[tuple[str, float]]:
        self._record("topics", text)
        words = [w for w in re.findall(r"[a-z]{6,}", text.lower())]
        ranked = sorted(set(words), key=lambda w: (-words.count(w), w))[:limit]
        return [(w, round(1.0 - i * 0.05, 2)) for i, w in enumerate(ranked)]

    async def entities(self, text: str, labels: Sequence[str]) -> list[tuple[str, str, int]]:
        self._record("entities", text)
        return [(w, "PERSON", text.count(w)) for w in capitalised_words(text)]

    def _record(self, kind: str, text: str) -> None:
        self.calls.append((kind, text))
        self.tenants.append(current_tenant(default="<none>"))
        if self.failure is not None:
            raise self.failure


@dataclass
class FakeWriter:
    upserts: list[dict] = field(default_factory=list)
    deletes: list[tuple[str, str]] = field(default_factory=list)
    failure: Exception | None = None

    async def upsert_document(self, document_id, title="", file_type="", topics=(), entities=()):
        if self.failure is not None:
            raise self.failure
        self.upserts.append({"tenant": current_tenant(default="<none>"), "document_id": document_id,
                             "title": title, "file_type": file_type, "topics": list(topics),
                             "entities": list(entities)})

    async def delete_document(self, document_id):
        if self.failure is not None:
            raise self.failure
        self.deletes.append((current_tenant(default="<none>"), document_id))


GRAPH_DOWN = Unavailable("graph: connection refused", reason="UNAVAILABLE")


# -- gRPC services (service tests) ---------------------------------------------------------
class FakeNlpService(nlp_grpc.NlpServiceServicer):
    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []  # (tenant, method)

    async def ExtractTopics(self, request, context):
        self.requests.append((current_tenant(), "ExtractTopics"))
        topics = await FakeExtractor().topics(request.text, request.max_topics or 10)
        return nlp_pb.ExtractTopicsResponse(topics=[nlp_pb.Topic(name=n, weight=w) for n, w in topics])

    async def ExtractEntities(self, request, context):
        self.requests.append((current_tenant(), "ExtractEntities"))
        entities = await FakeExtractor().entities(request.text, list(request.labels))
        return nlp_pb.ExtractEntitiesResponse(
            entities=[nlp_pb.Entity(text=n, label=t, count=c) for n, t, c in entities])


class FakeGraphService(graph_grpc.GraphServiceServicer):
    """Keeps the facts per (tenant, document); ``down`` makes every call UNAVAILABLE."""

    def __init__(self) -> None:
        self.documents: dict[tuple[str, str], dict] = {}
        self.deleted: list[tuple[str, str]] = []
        self.down = False
        self.calls = 0

    def _check(self) -> None:
        self.calls += 1
        if self.down:
            raise GRAPH_DOWN

    async def UpsertDocumentFacts(self, request_iterator, context):
        self._check()
        current = None
        async for message in request_iterator:
            which = message.WhichOneof("fact")
            if which == "document":
                current = {"title": message.document.title, "file_type": message.document.file_type,
                           "topics": {}, "entities": {}}
                self.documents[(current_tenant(), message.document.document_id)] = current
            elif which == "topic":
                current["topics"][message.topic.name] = message.topic.weight
            elif which == "entity":
                current["entities"][message.entity.name] = (message.entity.type, message.entity.count)
        return graph_pb.UpsertDocumentFactsResponse(documents=1 if current else 0)

    async def DeleteDocument(self, request, context):
        self._check()
        key = (current_tenant(), request.document_id)
        self.deleted.append(key)
        return graph_pb.DeleteDocumentResponse(deleted=self.documents.pop(key, None) is not None)


def nlp_binding(service: FakeNlpService) -> ServiceBinding:
    return ServiceBinding(
        name="nlp", full_names=[nlp_pb.DESCRIPTOR.services_by_name["NlpService"].full_name],
        register=lambda server: nlp_grpc.add_NlpServiceServicer_to_server(service, server))


def graph_binding(service: FakeGraphService) -> ServiceBinding:
    return ServiceBinding(
        name="graph", full_names=[graph_pb.DESCRIPTOR.services_by_name["GraphService"].full_name],
        register=lambda server: graph_grpc.add_GraphServiceServicer_to_server(service, server))
