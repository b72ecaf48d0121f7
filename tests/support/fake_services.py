"""One set of fake services at the mesh's gRPC boundaries, for the tests of every service that calls a peer.

Each is a real grpc.aio servicer of the published contract with deterministic, trivially checkable behaviour, so
the code under test talks over real channels; ``FakeMesh`` starts the three on their own servers. Every call is
recorded with the caller's tenant (``requests``); while ``down`` a fake answers UNAVAILABLE, as a stopped service
would. ``binding`` serves one through the runtime's own server (its interceptors, as a peer has them).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import grpc
from google.protobuf import struct_pb2

from docuthinker.graph.v1 import graph_service_pb2 as graph_pb
from docuthinker.graph.v1 import graph_service_pb2_grpc as graph_grpc
from docuthinker.nlp.v1 import nlp_service_pb2 as nlp_pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as nlp_grpc
from docuthinker.rag.v1 import answers_pb2, documents_pb2
from docuthinker.rag.v1 import rag_service_pb2 as rag_pb
from docuthinker.rag.v1 import rag_service_pb2_grpc as rag_grpc
from services.runtime import ServiceBinding, request_context

SENTENCE = re.compile(r"[^.!?]+[.!?]?")

HOLD_TIMEOUT_S = 5.0  # paid only when a test's overlap never comes (it then fails on its own assertion)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE.findall(text) if s.strip()]


def caller_tenant(context) -> str:
    """The tenant the caller named (``x-tenant-id``), or the default tenant."""
    metadata = dict(context.invocation_metadata() or ())
    return metadata.get(request_context.TENANT_HEADER, request_context.DEFAULT_TENANT)


class Switch:
    """A fake's record of its calls; while ``down``, every call fails with UNAVAILABLE."""

    def __init__(self) -> None:
        self.down = False
        self.requests: list[tuple[str, str]] = []
        """(tenant, method) of every call, in order."""

    @property
    def calls(self) -> list[str]:
        return [method for _, method in self.requests]

    async def guard(self, context, method: str) -> str:
        """Records the call; returns the caller's tenant."""
        tenant = caller_tenant(context)
        self.requests.append((tenant, method))
        if self.down:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "service stopped")
        return tenant


class _Switched:
    """``down``, ``calls`` and ``requests`` of a fake, read from (and set on) its switch."""

    switch: Switch

    @property
    def down(self) -> bool:
        return self.switch.down

    @down.setter
    def down(self, value: bool) -> None:
        self.switch.down = value

    @property
    def calls(self) -> list[str]:
        return self.switch.calls

    @property
    def requests(self) -> list[tuple[str, str]]:
        return self.switch.requests


class Extractor(Protocol):
    """Derives topics and entities from a text (``tests/rag/graph_sync/fakes.FakeExtractor``)."""

    async def topics(self, text: str, limit: int) -> list[tuple[str, float]]: ...

    async def entities(self, text: str, labels: Sequence[str]) -> list[tuple[str, str, int]]: ...


class FakeNlp(_Switched, nlp_grpc.NlpServiceServicer):
    """Summaries, key ideas and analytics from the text's sentences; topics and entities from its words (or from
    ``extractor``, where a test wants a given extraction)."""

    def __init__(self, switch: Switch | None = None, delay_s: float = 0.0, extractor: Extractor | None = None) -> None:
        self.switch = switch or Switch()
        self.extractor = extractor
        self.delay_s = delay_s
        self.in_flight = 0
        self.max_in_flight = 0
        self.hold_until_in_flight = 0
        """Holds each call until this many are in flight at once (or ``HOLD_TIMEOUT_S`` passes): a concurrency
        test then sees the overlap the code allows whatever the machine's load, instead of racing a delay."""
        self._released = asyncio.Event()
        self.rewrite_usage: list[nlp_pb.LlmUsage] = []
        """What each rewrite reports its LLM calls cost (none by default)."""
        self.documents: dict = {}
        """Stored documents a request may name by ``document_id`` (the fake rag's, shared by ``FakeMesh``)."""

    async def _text(self, request, context, method: str) -> str:
        tenant = await self.switch.guard(context, method)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.in_flight >= self.hold_until_in_flight:
                self._released.set()
            elif not self._released.is_set():
                with contextlib.suppress(TimeoutError):  # fewer calls overlap than asked: the test will say so
                    await asyncio.wait_for(self._released.wait(), HOLD_TIMEOUT_S)
                self._released.set()
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        if request.WhichOneof("source") == "document_id":
            stored = self.documents.get(request.document_id)
            if stored is None or not stored.visible_to(tenant):
                await context.abort(grpc.StatusCode.NOT_FOUND, f"document {request.document_id} not found")
            return stored.text
        if request.WhichOneof("source") != "text" or not request.text.strip():
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "text is empty")
        return request.text

    async def Summarize(self, request, context):
        text = await self._text(request, context, "Summarize")
        parts = sentences(text)
        if request.style == nlp_pb.SUMMARY_STYLE_BULLETS:
            return nlp_pb.SummarizeResponse(bullets=parts[:3], summary=" ".join(parts[:3]), style=request.style)
        return nlp_pb.SummarizeResponse(summary=parts[0], style=nlp_pb.SUMMARY_STYLE_NARRATIVE)

    async def ExtractKeyIdeas(self, request, context):
        text = await self._text(request, context, "ExtractKeyIdeas")
        return nlp_pb.ExtractKeyIdeasResponse(ideas=sentences(text)[:3])

    async def AnalyzeSentiment(self, request, context):
        text = await self._text(request, context, "AnalyzeSentiment")
        score = 0.8 if "good" in text.lower() else -0.8 if "bad" in text.lower() else 0.0
        label = nlp_pb.SENTIMENT_LABEL_POSITIVE if score > 0 else (
            nlp_pb.SENTIMENT_LABEL_NEGATIVE if score < 0 else nlp_pb.SENTIMENT_LABEL_NEUTRAL)
        return nlp_pb.AnalyzeSentimentResponse(overall=nlp_pb.Sentiment(label=label, score=score, confidence=0.9))

    async def ExtractEntities(self, request, context):
        text = await self._text(request, context, "ExtractEntities")
        if self.extractor is not None:
            found = await self.extractor.entities(text, list(request.labels))
            return nlp_pb.ExtractEntitiesResponse(
                entities=[nlp_pb.Entity(text=n, label=t, count=c) for n, t, c in found])
        names = re.findall(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*\b", text)
        counts: dict[str, int] = {}
        for name in names:
            counts[name] = counts.get(name, 0) + 1
        return nlp_pb.ExtractEntitiesResponse(
            entities=[nlp_pb.Entity(text=n, label="PROPN", count=c) for n, c in counts.items()]
        )

    async def ComputeAnalytics(self, request, context):
        text = await self._text(request, context, "ComputeAnalytics")
        return nlp_pb.ComputeAnalyticsResponse(words=len(text.split()), sentences=len(sentences(text)))

    async def ExtractTopics(self, request, context):
        text = await self._text(request, context, "ExtractTopics")
        if self.extractor is not None:
            topics = await self.extractor.topics(text, request.max_topics or 10)
            return nlp_pb.ExtractTopicsResponse(topics=[nlp_pb.Topic(name=n, weight=w) for n, w in topics])
        words = sorted({w.lower() for w in re.findall(r"[A-Za-z]{6,}", text)})
        return nlp_pb.ExtractTopicsResponse(topics=[nlp_pb.Topic(name=w, weight=1.0) for w in words[:5]])

    async def RewriteText(self, request, context):
        text = await self._text(request, context, "RewriteText")
        return nlp_pb.RewriteTextResponse(
            rewritten=f"[{request.style}] {text}", style=request.style, llm_usage=self.rewrite_usage
        )


@dataclass
class StoredDocument:
    document_id: str
    filename: str
    text: str
    tenant: str | None = None
    """The tenant that owns it; None: every tenant sees it."""
    sections: Sequence[str] = ()
    """Its pages (one page of ``text`` when empty)."""

    def visible_to(self, tenant: str) -> bool:
        return self.tenant is None or self.tenant == tenant


class FakeRag(_Switched, rag_grpc.RagServiceServicer):
    """Stored documents, keyword search over their sentences, and the best sentence as the answer."""

    def __init__(self, switch: Switch | None = None) -> None:
        self.switch = switch or Switch()
        self.documents: dict[str, StoredDocument] = {}
        self.streamed: list[str] = []
        """The questions StreamQuery was asked, in order."""

    @property
    def tenants(self) -> list[str]:
        """The tenant of every call, in order."""
        return [tenant for tenant, _ in self.switch.requests]

    def add(self, text: str, filename: str = "doc.txt", *, tenant: str | None = None, document_id: str | None = None,
            sections: Sequence[str] = ()) -> str:
        """Stores a document (as ``tenant``'s alone, when given); returns its id."""
        document_id = document_id or hashlib.sha256(text.encode()).hexdigest()[:16]
        self.documents[document_id] = StoredDocument(document_id, filename, text, tenant, tuple(sections))
        return document_id

    async def ListDocuments(self, request, context):
        await self.switch.guard(context, "ListDocuments")
        return rag_pb.ListDocumentsResponse(documents=[
            documents_pb2.Document(document_id=d.document_id, filename=d.filename, file_type="text",
                                   status=documents_pb2.DOCUMENT_STATUS_READY)
            for d in self.documents.values()])

    async def IngestDocument(self, request, context):
        await self.switch.guard(context, "IngestDocument")
        document_id = self.add(request.file.data.decode("utf-8"), request.filename)
        return rag_pb.IngestDocumentResponse(
            result=documents_pb2.IngestResult(
                document=documents_pb2.Document(document_id=document_id, filename=request.filename, chunk_count=1)
            )
        )

    async def GetDocumentText(self, request, context):
        tenant = await self.switch.guard(context, "GetDocumentText")
        document = self.documents.get(request.document_id)
        if document is None or not document.visible_to(tenant):
            await context.abort(grpc.StatusCode.NOT_FOUND, f"document {request.document_id} not found")
        pages = document.sections or [document.text]
        return rag_pb.GetDocumentTextResponse(
            document=documents_pb2.Document(document_id=document.document_id, filename=document.filename),
            sections=[rag_pb.GetDocumentTextResponse.Section(page=n, text=t) for n, t in enumerate(pages, 1)],
        )

    async def Search(self, request, context):
        await self.switch.guard(context, "Search")
        terms = set(request.query.lower().split())
        hits = []
        for document in self.documents.values():
            for sentence in sentences(document.text):
                overlap = len(terms & set(sentence.lower().split()))
                if overlap:
                    hits.append(answers_pb2.ScoredChunk(
                        chunk_id=f"{document.document_id}-{len(hits)}", text=sentence, score=float(overlap),
                        provenance=documents_pb2.Provenance(document_id=document.document_id,
                                                            filename=document.filename, page=1),
                    ))
        hits.sort(key=lambda h: h.score, reverse=True)
        return rag_pb.SearchResponse(results=hits[: request.top_k or 6], fusion=request.fusion)

    async def Query(self, request, context):
        await self.switch.guard(context, "Query")
        found = await self.Search(rag_pb.SearchRequest(query=request.question, top_k=1), context)
        answer = found.results[0].text if found.results else "I could not find enough evidence."
        return rag_pb.QueryResponse(answer=answers_pb2.Answer(
            question=request.question, answer=answer, engine=answers_pb2.Engine(provider="local", model="extractive")))


    async def StreamQuery(self, request, context):
        """The Query answer as deltas (two words at a time), one citation, then the whole answer."""
        await self.switch.guard(context, "StreamQuery")
        self.streamed.append(request.question)
        found = await self.Search(rag_pb.SearchRequest(query=request.question, top_k=1), context)
        if not found.results:
            yield rag_pb.StreamQueryResponse(done=answers_pb2.Answer(question=request.question,
                                                                      answer="I could not find enough evidence."))
            return
        hit = found.results[0]
        words = hit.text.split(" ")
        for at in range(0, len(words), 2):
            yield rag_pb.StreamQueryResponse(answer_delta=" ".join(words[at:at + 2]) + " ")
        citation = answers_pb2.Citation(marker=1, document_id=hit.provenance.document_id, filename=hit.provenance.filename,
                                        page=1, excerpt=hit.text, short_answer=words[0])
        yield rag_pb.StreamQueryResponse(citation=citation)
        yield rag_pb.StreamQueryResponse(done=answers_pb2.Answer(
            question=request.question, answer=hit.text, citations=[citation], retrieved_chunks=[hit],
            support_status=answers_pb2.SUPPORT_STATUS_SUPPORTED))


class FakeGraph(_Switched, graph_grpc.GraphServiceServicer):
    """Answers queries with one fixed row; keeps the facts it is sent per (tenant, document)."""

    def __init__(self, switch: Switch | None = None) -> None:
        self.switch = switch or Switch()
        self.queries: list[tuple[str, dict]] = []
        self.documents: dict[tuple[str, str], dict] = {}
        self.deleted: list[tuple[str, str]] = []

    async def QueryGraph(self, request, context):
        await self.switch.guard(context, "QueryGraph")
        params = dict(request.params)
        self.queries.append((request.cypher, params))
        row = struct_pb2.Struct()
        if "Topic" in request.cypher:
            row.update({"document_id": "d1", "title": "Doc", "kind": "topic", "name": params.get("lower", "x"),
                        "weight": 0.7})
        else:
            row.update({"n": 1})
        return graph_pb.QueryGraphResponse(columns=list(row.keys()), rows=[row])

    async def GetGraphStats(self, request, context):
        await self.switch.guard(context, "GetGraphStats")
        return graph_pb.GetGraphStatsResponse(documents=1, backend="fake")

    async def GetRelatedDocuments(self, request, context):
        """The caller's other documents (those it sent facts for), in the order they came."""
        tenant = await self.switch.guard(context, "GetRelatedDocuments")
        others = [d for t, d in self.documents if t == tenant and d != request.document_id]
        return graph_pb.GetRelatedDocumentsResponse(documents=[
            graph_pb.RelatedDocument(document_id=d, title=self.documents[(tenant, d)]["title"], score=1.0)
            for d in others[: request.limit or 10]])

    async def UpsertDocumentFacts(self, request_iterator, context):
        tenant = await self.switch.guard(context, "UpsertDocumentFacts")
        current = None
        async for message in request_iterator:
            which = message.WhichOneof("fact")
            if which == "document":
                current = {"title": message.document.title, "file_type": message.document.file_type,
                           "topics": {}, "entities": {}}
                self.documents[(tenant, message.document.document_id)] = current
            elif which == "topic":
                current["topics"][message.topic.name] = message.topic.weight
            elif which == "entity":
                current["entities"][message.entity.name] = (message.entity.type, message.entity.count)
        return graph_pb.UpsertDocumentFactsResponse(documents=1 if current else 0)

    async def DeleteDocument(self, request, context):
        key = (await self.switch.guard(context, "DeleteDocument"), request.document_id)
        self.deleted.append(key)
        return graph_pb.DeleteDocumentResponse(deleted=self.documents.pop(key, None) is not None)


@dataclass
class FakeMesh:
    """The three fake services on one real gRPC server each."""

    nlp: FakeNlp
    rag: FakeRag
    graph: FakeGraph
    switches: dict[str, Switch]
    ports: dict[str, int] = field(default_factory=dict)
    servers: list[grpc.aio.Server] = field(default_factory=list)

    @classmethod
    async def start(cls) -> FakeMesh:
        switches = {name: Switch() for name in ("nlp", "rag", "graph")}
        mesh = cls(FakeNlp(switches["nlp"]), FakeRag(switches["rag"]), FakeGraph(switches["graph"]), switches)
        mesh.nlp.documents = mesh.rag.documents
        for name, servicer, add in (
            ("nlp", mesh.nlp, nlp_grpc.add_NlpServiceServicer_to_server),
            ("rag", mesh.rag, rag_grpc.add_RagServiceServicer_to_server),
            ("graph", mesh.graph, graph_grpc.add_GraphServiceServicer_to_server),
        ):
            server = grpc.aio.server()
            add(servicer, server)
            mesh.ports[name] = server.add_insecure_port("127.0.0.1:0")
            await server.start()
            mesh.servers.append(server)
        return mesh

    async def stop(self) -> None:
        for server in self.servers:
            await server.stop(0)


def binding(name: str, servicer) -> ServiceBinding:
    """Serves ``servicer`` (one of the fakes) through the runtime's own server, as the peer ``name``."""
    module, add = {"nlp": (nlp_pb, nlp_grpc.add_NlpServiceServicer_to_server),
                   "rag": (rag_pb, rag_grpc.add_RagServiceServicer_to_server),
                   "graph": (graph_pb, graph_grpc.add_GraphServiceServicer_to_server)}[name]
    service = {"nlp": "NlpService", "rag": "RagService", "graph": "GraphService"}[name]
    return ServiceBinding(name=name, full_names=[module.DESCRIPTOR.services_by_name[service].full_name],
                          register=lambda server: add(servicer, server))
