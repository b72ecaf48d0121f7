"""The RAG service in process with its real graph feed (real channels, tenant metadata, retries)
talking to fake NLP and graph gRPC services: PENDING at upload, SYNCED in the background,
outage and restart, re-index, delete, and the off switch."""

from __future__ import annotations

import asyncio
import pathlib
import time

import grpc
import pytest
from google.api import httpbody_pb2

from docuthinker.rag.v1 import documents_pb2
from docuthinker.rag.v1 import rag_service_pb2 as pb
from docuthinker.rag.v1 import rag_service_pb2_grpc as pb_grpc
from services.rag.graph_sync.feed import mesh_feed
from services.rag.graph_sync.settings import GraphSyncSettings
from services.rag.service import RagService
from services.rag.settings import RagSettings
from services.runtime import ChannelPool, MeshSettings, create_server
from tests.support.embedders import HashEmbedder
from tests.support.fake_services import FakeGraph, FakeNlp, binding

from .fakes import FakeExtractor

GUIDE = b"""# Turbine maintenance

The maintenance crews inspect every turbine blade in spring, and Ada Dubois signs the corrosion report.
Corrosion at the blade roots worries Ada, so the crews apply a coating; Grace audits the coating.
"""
FAST = GraphSyncSettings(poll_interval_s=0.1, backoff_initial_s=0.2, backoff_max_s=0.5, call_timeout_s=10)
TENANT = (("x-tenant-id", "acme"),)


class Peers:
    """Fake NLP and graph services on free ports, and the mesh settings that point at them."""

    async def __aenter__(self) -> Peers:
        base = MeshSettings(downstream_timeout_s=10)
        self.nlp, self.graph = FakeNlp(extractor=FakeExtractor()), FakeGraph()
        self._servers = [await create_server(binding("nlp", self.nlp), base, port=0),
                         await create_server(binding("graph", self.graph), base, port=0)]
        self.ports = {"nlp_port": self._servers[0].port, "graph_port": self._servers[1].port}
        return self

    async def __aexit__(self, *exc) -> None:
        for server in self._servers:
            await server.stop(0)


class Rag:
    def __init__(self, data_dir: pathlib.Path, peers: Peers, graph: GraphSyncSettings = FAST) -> None:
        self.settings = MeshSettings(data_dir=data_dir, downstream_timeout_s=10, **peers.ports)
        channels = ChannelPool(self.settings)
        self.service = RagService(self.settings, RagSettings(keyword_refresh_delay_s=0.0), embedder=HashEmbedder(),
                                  graph_feed=mesh_feed(channels, graph), graph_settings=graph, channels=channels)

    async def __aenter__(self) -> Rag:
        self.running = await create_server(self.service.binding(), self.settings, port=0)
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{self.running.port}")
        self.stub = pb_grpc.RagServiceStub(self.channel)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.channel.close()
        await self.running.stop(0)

    async def upload(self, name: str, data: bytes) -> list:
        request = pb.UploadDocumentRequest(filename=name, file=httpbody_pb2.HttpBody(data=data))
        return [event async for event in self.stub.UploadDocument(request, metadata=TENANT)]

    async def document(self, document_id: str) -> documents_pb2.Document:
        reply = await self.stub.GetDocument(pb.GetDocumentRequest(document_id=document_id), metadata=TENANT)
        return reply.document

    async def wait_for_sync(self, document_id: str, timeout: float = 20.0) -> documents_pb2.Document:
        deadline = time.monotonic() + timeout
        while (document := await self.document(document_id)).graph_sync != documents_pb2.GRAPH_SYNC_STATUS_SYNCED:
            assert time.monotonic() < deadline, f"still {documents_pb2.GraphSyncStatus.Name(document.graph_sync)}"
            await asyncio.sleep(0.05)
        return document


@pytest.fixture
async def peers():
    async with Peers() as running:
        yield running


async def _until(condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


async def test_ingestion_ends_pending_and_the_worker_syncs_in_the_background(tmp_path, peers) -> None:
    async with Rag(tmp_path, peers) as rag:
        events = await rag.upload("guide.md", GUIDE)
        stages = [e.progress.stage for e in events[:-1]]
        assert stages[-1] == documents_pb2.INGEST_STAGE_INDEXED
        assert documents_pb2.INGEST_STAGE_GRAPH_SYNCED not in stages
        done = events[-1].done.document
        assert done.status == documents_pb2.DOCUMENT_STATUS_READY
        assert done.graph_sync == documents_pb2.GRAPH_SYNC_STATUS_PENDING

        synced = await rag.wait_for_sync(done.document_id)
        assert synced.status == documents_pb2.DOCUMENT_STATUS_READY
        facts = peers.graph.documents[("acme", done.document_id)]
        assert facts["title"] == "Turbine maintenance" and facts["file_type"] == "markdown"
        assert "corrosion" in facts["topics"] and facts["entities"]["Ada"] == ("PERSON", 2)
        # The tenant travelled with every background call, as x-tenant-id metadata.
        assert {tenant for tenant, _ in peers.nlp.requests} == {"acme"}

        # Re-index re-syncs.
        upserts = len(peers.graph.calls)
        reindexed = await rag.stub.ReindexDocument(pb.ReindexDocumentRequest(document_id=done.document_id),
                                                   metadata=TENANT)
        assert reindexed.document.graph_sync == documents_pb2.GRAPH_SYNC_STATUS_PENDING
        await rag.wait_for_sync(done.document_id)
        assert len(peers.graph.calls) == upserts + 1

        # Delete reaches the graph.
        await rag.stub.DeleteDocument(pb.DeleteDocumentRequest(document_id=done.document_id), metadata=TENANT)
        await _until(lambda: ("acme", done.document_id) in peers.graph.deleted)
        assert ("acme", done.document_id) not in peers.graph.documents
        await _until(lambda: rag.service.graph.outbox.entries() == [])


async def test_graph_outage_leaves_documents_pending_and_a_restart_resumes_them(tmp_path, peers) -> None:
    peers.graph.down = True
    async with Rag(tmp_path, peers) as rag:
        done = (await rag.upload("guide.md", GUIDE))[-1].done.document
        outbox = rag.service.graph.outbox
        await _until(lambda: (entry := outbox.get("acme", done.document_id)) is not None and entry.attempts >= 2)
        entry = outbox.get("acme", done.document_id)
        assert "UNAVAILABLE" in entry.last_error and entry.facts is not None
        assert (await rag.document(done.document_id)).graph_sync == documents_pb2.GRAPH_SYNC_STATUS_PENDING
        listed = await rag.stub.ListDocuments(pb.ListDocumentsRequest(), metadata=TENANT)
        assert [d.graph_sync for d in listed.documents] == [documents_pb2.GRAPH_SYNC_STATUS_PENDING]
        nlp_calls = len(peers.nlp.requests)

    peers.graph.down = False
    async with Rag(tmp_path, peers) as rag:  # restarted: the outbox entry is picked up again
        await rag.wait_for_sync(done.document_id)
        assert ("acme", done.document_id) in peers.graph.documents
    assert len(peers.nlp.requests) == nlp_calls  # the facts found before the outage were reused


async def test_delete_during_an_outage_cancels_the_pending_upsert(tmp_path, peers) -> None:
    peers.graph.down = True
    async with Rag(tmp_path, peers) as rag:
        done = (await rag.upload("guide.md", GUIDE))[-1].done.document
        await rag.stub.DeleteDocument(pb.DeleteDocumentRequest(document_id=done.document_id), metadata=TENANT)
        [entry] = rag.service.graph.outbox.entries()
        assert entry.operation.value == "delete"
        peers.graph.down = False
        await _until(lambda: ("acme", done.document_id) in peers.graph.deleted)
        assert ("acme", done.document_id) not in peers.graph.documents


async def test_sync_switched_off_leaves_documents_disabled(tmp_path, peers) -> None:
    off = GraphSyncSettings(sync=False)
    async with Rag(tmp_path, peers, off) as rag:
        done = (await rag.upload("guide.md", GUIDE))[-1].done.document
        assert done.graph_sync == documents_pb2.GRAPH_SYNC_STATUS_DISABLED
        await rag.stub.DeleteDocument(pb.DeleteDocumentRequest(document_id=done.document_id), metadata=TENANT)
        assert rag.service.graph.outbox.entries() == [] and rag.service.graph.worker is None
    assert peers.nlp.requests == [] and peers.graph.calls == []


async def test_sync_resumes_within_seconds_of_the_graph_coming_back_despite_a_long_backoff(tmp_path, peers) -> None:
    """A real outage (the graph server gone, connections refused), ten minutes of backoff, then the
    graph returns on its port: the worker's health watch sees it and syncs at once (within a minute on
    a loaded machine, far from the backoff)."""
    slow_backoff = GraphSyncSettings(poll_interval_s=0.1, backoff_initial_s=600.0, backoff_max_s=1200.0,
                                     call_timeout_s=10, peer_watch_interval_s=0.2)
    graph_port = peers.ports["graph_port"]
    await peers._servers[1].stop(0)
    async with Rag(tmp_path, peers, slow_backoff) as rag:
        done = (await rag.upload("guide.md", GUIDE))[-1].done.document
        outbox = rag.service.graph.outbox
        await _until(lambda: (entry := outbox.get("acme", done.document_id)) is not None and entry.attempts >= 1)
        assert outbox.get("acme", done.document_id).next_attempt_time > time.time() + 300

        peers._servers[1] = await create_server(binding("graph", peers.graph), MeshSettings(), port=graph_port)
        await rag.wait_for_sync(done.document_id, timeout=60)  # far sooner than the backoff it was waiting out
        assert ("acme", done.document_id) in peers.graph.documents
