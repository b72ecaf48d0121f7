"""The documents API over a real gRPC server (in process) with the real MiniLM embedder."""

from __future__ import annotations

import asyncio
import pathlib

import grpc
import pytest
from google.api import httpbody_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from docuthinker.rag.v1 import documents_pb2
from docuthinker.rag.v1 import rag_service_pb2 as pb
from docuthinker.rag.v1 import rag_service_pb2_grpc as pb_grpc
from services.models.embedder import get_embedder
from services.rag.service import RagService
from services.rag.settings import RagSettings
from services.runtime import MeshSettings, create_server

from .factories import make_docx, make_pdf, make_xlsx

pytestmark = pytest.mark.models  # the real embedder / local model

LIMIT = 256 * 1024


class Server:
    def __init__(self, data_dir: pathlib.Path) -> None:
        self.settings = MeshSettings(data_dir=data_dir, max_upload_bytes=LIMIT)
        self.service = RagService(self.settings, RagSettings(keyword_refresh_delay_s=0.0), embedder=get_embedder())

    async def __aenter__(self):
        self.running = await create_server(self.service.binding(), self.settings, port=0)
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{self.running.port}")
        self.stub = pb_grpc.RagServiceStub(self.channel)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.channel.close()
        await self.running.stop(1)


@pytest.fixture(scope="module")
async def server(tmp_path_factory):
    async with Server(tmp_path_factory.mktemp("rag-service")) as running:
        yield running


def tenant(name: str) -> tuple[tuple[str, str], ...]:
    return (("x-tenant-id", name),)


def body(data: bytes, content_type: str = "") -> httpbody_pb2.HttpBody:
    return httpbody_pb2.HttpBody(content_type=content_type, data=data)


async def upload(stub, name: str, data: bytes, who: str, content_type: str = ""):
    call = stub.UploadDocument(pb.UploadDocumentRequest(filename=name, file=body(data, content_type)),
                               metadata=tenant(who))
    return [event async for event in call]


def reason_of(error: grpc.RpcError) -> str:
    status = rpc_status.from_call(error)
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return info.reason
    return ""


DOCS = {
    "report.pdf": make_pdf([["Quarterly revenue rose by twelve percent.", "Margins held steady."],
                            ["The board approved a new turbine factory in Lyon."]]),
    "report.docx": make_docx(),
    "cups.xlsx": make_xlsx({"Cups": [["Team", "Cups"], ["Blues", 1], ["Maple Leafs", 13]], "Other": [["x", "y"]]}),
    "cities.csv": b"city;country;population\nLyon;France;522000\nTurin;Italy;848000\n",
    "cities.tsv": b"city\tcountry\nOslo\tNorway\n",
    "page.html": b"<html><body><h1>Title</h1><p>Paragraph about wind turbines.</p><script>x()</script></body></html>",
    "guide.md": b"# Guide\n\nIntro text.\n\n## Step one\n\nDo the first thing.\n",
    "notes.txt": "Plain notes about turbines, naïve café.\n".encode("utf-16"),
}


@pytest.mark.parametrize("name", sorted(DOCS))
async def test_upload_each_format_streams_progress_and_ends_ready(server, name) -> None:
    events = await upload(server.stub, name, DOCS[name], "formats")
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[-1] == "done" and set(kinds[:-1]) == {"progress"}
    stages = [e.progress.stage for e in events[:-1]]
    assert stages[0] == documents_pb2.INGEST_STAGE_RECEIVED and stages[-1] == documents_pb2.INGEST_STAGE_INDEXED
    assert documents_pb2.INGEST_STAGE_EMBEDDED in stages
    document = events[-1].done.document
    assert document.status == documents_pb2.DOCUMENT_STATUS_READY and document.chunk_count > 0
    assert document.filename == name and document.tenant == "formats"
    assert document.graph_sync == documents_pb2.GRAPH_SYNC_STATUS_DISABLED

    text = await server.stub.GetDocumentText(pb.GetDocumentTextRequest(document_id=document.document_id),
                                             metadata=tenant("formats"))
    assert text.sections and all(s.text.strip() for s in text.sections)
    # Provenance: each stored chunk's offsets slice its section's text exactly.
    index = server.service.runtime.index
    chunks = index.metadata.document_chunks("formats", document.document_id)
    assert len(chunks) == document.chunk_count
    for chunk in chunks:
        section = text.sections[chunk.provenance.section_index]
        assert section.text[chunk.provenance.char_start : chunk.provenance.char_end] == chunk.text
        assert chunk.provenance.page == section.page and chunk.provenance.sheet_name == section.sheet_name


async def test_format_specific_provenance(server) -> None:
    pdf = (await upload(server.stub, "p.pdf", make_pdf([["page one"], ["page two text"]]), "prov"))[-1].done.document
    assert pdf.page_count == 2
    chunks = server.service.runtime.metadata.document_chunks("prov", pdf.document_id)
    assert sorted({c.provenance.page for c in chunks}) == [1, 2]

    rows = [["Team", "Cups"]] + [[f"Team {i}", i] for i in range(1, 200)]
    xlsx = (await upload(server.stub, "t.xlsx", make_xlsx({"League": rows}), "prov"))[-1].done.document
    assert list(xlsx.sheet_names) == ["League"]
    chunks = server.service.runtime.metadata.document_chunks("prov", xlsx.document_id)
    assert chunks[0].provenance.row_start == 2 and chunks[-1].provenance.row_end == 200
    assert all(c.text.startswith("Team | Cups\n") for c in chunks)

    md = (await upload(server.stub, "g.md", DOCS["guide.md"], "prov"))[-1].done.document
    paths = {tuple(c.provenance.heading_path) for c in server.service.runtime.metadata.document_chunks("prov", md.document_id)}
    assert paths == {("Guide",), ("Guide", "Step one")}


async def test_ingest_document_is_unary_and_reports_duplicates(server) -> None:
    request = pb.IngestDocumentRequest(filename="once.txt", file=body(b"Idempotent upload of the same bytes."))
    first = await server.stub.IngestDocument(request, metadata=tenant("dup"))
    second = await server.stub.IngestDocument(request, metadata=tenant("dup"))
    assert not first.result.duplicate and second.result.duplicate
    assert first.result.document.document_id == second.result.document.document_id
    streamed = await upload(server.stub, "again.txt", b"Idempotent upload of the same bytes.", "dup")
    assert len(streamed) == 1 and streamed[0].done.duplicate
    listed = await server.stub.ListDocuments(pb.ListDocumentsRequest(), metadata=tenant("dup"))
    assert listed.total_size == 1


async def _stream_parts(parts, consumed: list[int]):
    for part in parts:
        consumed.append(1)
        yield part
        await asyncio.sleep(0)


async def test_client_streamed_upload(server) -> None:
    data = DOCS["report.pdf"]
    parts = [pb.StreamUploadDocumentRequest(header=pb.StreamUploadDocumentRequest.Header(
        filename="streamed.pdf", content_type="application/pdf", size_bytes=len(data)))]
    parts += [pb.StreamUploadDocumentRequest(chunk=data[i : i + 1000]) for i in range(0, len(data), 1000)]
    events = [e async for e in server.stub.StreamUploadDocument(_stream_parts(parts, []), metadata=tenant("stream"))]
    assert events[-1].done.document.status == documents_pb2.DOCUMENT_STATUS_READY
    assert events[-1].done.document.size_bytes == len(data)


def _pieces(kind, name: str, data: bytes, content_type: str, size: int = 1000) -> list:
    """A raw body as the gateway streams it (``UploadDocumentBody``): name and type with the first piece only."""
    return [kind(filename=name, file=body(data[:size], content_type)),
            *(kind(file=body(data[i:i + size])) for i in range(size, len(data), size))]


async def test_a_rest_upload_arrives_in_pieces_and_makes_one_document(server) -> None:
    data = DOCS["report.pdf"]
    pieces = _pieces(pb.UploadDocumentBodyRequest, "pieces.pdf", data, "application/pdf", size=200)
    assert len(pieces) > 3
    events = [e async for e in server.stub.UploadDocumentBody(_stream_parts(pieces, []), metadata=tenant("pieces"))]
    document = events[-1].done.document
    assert document.status == documents_pb2.DOCUMENT_STATUS_READY and document.size_bytes == len(data)
    assert document.filename == "pieces.pdf" and document.content_type == "application/pdf"
    again = _pieces(pb.IngestDocumentBodyRequest, "pieces.pdf", data, "application/pdf", size=4096)
    reply = await server.stub.IngestDocumentBody(_stream_parts(again, []), metadata=tenant("pieces"))
    assert reply.result.duplicate and reply.result.document.document_id == document.document_id


@pytest.mark.parametrize(
    ("pieces", "reason"),
    [
        (_pieces(pb.UploadDocumentBodyRequest, "big.txt", b"y" * 6_500_000, "text/plain", 16384), "UPLOAD_TOO_LARGE"),
        (_pieces(pb.UploadDocumentBodyRequest, "x.exe", b"z" * 4_000_000, "", 16384), "UNSUPPORTED_FILE_TYPE"),
    ],
)
async def test_a_rest_upload_is_refused_while_its_pieces_arrive(server, pieces, reason) -> None:
    code, got, sent = await _send_until_refused(server, pieces, "UploadDocumentBody")
    assert (code, got) == (grpc.StatusCode.INVALID_ARGUMENT, reason)
    assert sent < len(pieces) // 2, "the server should refuse as soon as it can, not after reading everything"


async def _send_until_refused(server, parts, method: str = "StreamUploadDocument") -> tuple[grpc.StatusCode, str, int]:
    """Streams parts with the sync client until the server ends the call.

    The sync client on purpose: grpc.aio clients report INTERNAL instead of the server's status
    when a write races the server ending the call (grpc/grpc#36066).
    """
    sent: list[int] = []

    def requests():
        for part in parts:
            sent.append(1)
            yield part

    def call() -> tuple[grpc.StatusCode, str]:
        with grpc.insecure_channel(f"127.0.0.1:{server.running.port}") as channel:
            stub = pb_grpc.RagServiceStub(channel)
            try:
                for _ in getattr(stub, method)(requests(), metadata=tenant("stream")):
                    pass
            except grpc.RpcError as error:
                return error.code(), reason_of(error)
        return grpc.StatusCode.OK, ""

    code, reason = await asyncio.to_thread(call)
    return code, reason, len(sent)


async def test_client_stream_limit_is_enforced_while_receiving(server) -> None:
    header = pb.StreamUploadDocumentRequest(header=pb.StreamUploadDocumentRequest.Header(filename="big.txt"))
    parts = [header] + [pb.StreamUploadDocumentRequest(chunk=b"y" * 16384) for _ in range(400)]  # 6.5 MB
    code, reason, sent = await _send_until_refused(server, parts)
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "UPLOAD_TOO_LARGE")
    assert sent < 200, "the server should refuse soon after the limit, not after reading everything"


@pytest.mark.parametrize(
    ("header", "first_chunk", "code", "reason"),
    [
        (pb.StreamUploadDocumentRequest.Header(filename="x.txt", size_bytes=LIMIT + 1), None,
         grpc.StatusCode.INVALID_ARGUMENT, "UPLOAD_TOO_LARGE"),
        (pb.StreamUploadDocumentRequest.Header(filename="x.exe"), None,
         grpc.StatusCode.INVALID_ARGUMENT, "UNSUPPORTED_FILE_TYPE"),
        (None, b"bytes before any header", grpc.StatusCode.INVALID_ARGUMENT, "HEADER_FIRST"),
    ],
)
async def test_client_stream_is_refused_early(server, header, first_chunk, code, reason) -> None:
    parts = [pb.StreamUploadDocumentRequest(header=header)] if header else []
    parts += [pb.StreamUploadDocumentRequest(chunk=first_chunk or b"z" * 16384) for _ in range(300)]
    got_code, got_reason, sent = await _send_until_refused(server, parts)
    assert (got_code, got_reason) == (code, reason)
    assert sent < 300


@pytest.mark.parametrize(
    ("name", "data", "code", "reason"),
    [
        ("big.txt", b"x" * (LIMIT + 1), grpc.StatusCode.INVALID_ARGUMENT, "UPLOAD_TOO_LARGE"),
        ("virus.exe", b"MZ", grpc.StatusCode.INVALID_ARGUMENT, "UNSUPPORTED_FILE_TYPE"),
        ("empty.md", b"", grpc.StatusCode.INVALID_ARGUMENT, "EMPTY_DOCUMENT"),
        ("fake.pdf", b"%PDF-1.7 this is not really a pdf", grpc.StatusCode.INVALID_ARGUMENT, "CORRUPT_FILE"),
        ("locked.pdf", make_pdf([["s"]], user_password="u", owner_password="o"),
         grpc.StatusCode.FAILED_PRECONDITION, "ENCRYPTED_PDF"),
        ("scan.pdf", make_pdf([[]]), grpc.StatusCode.INVALID_ARGUMENT, "NO_EXTRACTABLE_TEXT"),
    ],
)
async def test_bad_input_fails_the_rpc_with_its_status_and_stores_nothing(server, name, data, code, reason) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await upload(server.stub, name, data, "bad")
    assert (caught.value.code(), reason_of(caught.value)) == (code, reason)
    listed = await server.stub.ListDocuments(pb.ListDocumentsRequest(), metadata=tenant("bad"))
    assert listed.total_size == 0


async def test_documents_are_tenant_scoped(server) -> None:
    events = await upload(server.stub, "private.txt", b"Acme private plans for the new factory.", "acme")
    doc_id = events[-1].done.document.document_id
    other = await server.stub.ListDocuments(pb.ListDocumentsRequest(), metadata=tenant("globex"))
    assert doc_id not in [d.document_id for d in other.documents]
    for call in (
        server.stub.GetDocument(pb.GetDocumentRequest(document_id=doc_id), metadata=tenant("globex")),
        server.stub.GetDocumentText(pb.GetDocumentTextRequest(document_id=doc_id), metadata=tenant("globex")),
        server.stub.DeleteDocument(pb.DeleteDocumentRequest(document_id=doc_id), metadata=tenant("globex")),
        server.stub.ReindexDocument(pb.ReindexDocumentRequest(document_id=doc_id), metadata=tenant("globex")),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    got = await server.stub.GetDocument(pb.GetDocumentRequest(document_id=doc_id), metadata=tenant("acme"))
    assert got.document.filename == "private.txt"


async def test_delete_and_reindex(server) -> None:
    events = await upload(server.stub, "cycle.md", b"# Cycle\n\nA document that is re-indexed, then deleted.", "cycle")
    doc_id = events[-1].done.document.document_id
    reindexed = await server.stub.ReindexDocument(pb.ReindexDocumentRequest(document_id=doc_id),
                                                  metadata=tenant("cycle"))
    assert reindexed.document.status == documents_pb2.DOCUMENT_STATUS_READY
    ids = [c.chunk_id for c in server.service.runtime.metadata.document_chunks("cycle", doc_id)]
    deleted = await server.stub.DeleteDocument(pb.DeleteDocumentRequest(document_id=doc_id), metadata=tenant("cycle"))
    assert deleted.chunks_removed == len(ids) > 0
    runtime = server.service.runtime
    assert runtime.metadata.get_chunks("cycle", ids) == [] and runtime.vectors.stored_ids("cycle") == []
    assert runtime.keyword.persisted_ids("cycle") == []


async def test_restart_keeps_documents_and_rebuilds_dense_search(tmp_path) -> None:
    async with Server(tmp_path) as first:
        events = await upload(first.stub, "kept.txt", b"Durable facts about offshore wind farms.", "restart")
    doc_id = events[-1].done.document.document_id
    async with Server(tmp_path) as second:
        got = await second.stub.GetDocument(pb.GetDocumentRequest(document_id=doc_id), metadata=tenant("restart"))
        assert got.document.status == documents_pb2.DOCUMENT_STATUS_READY
        query = get_embedder().encode(["offshore wind"])[0]
        hits = second.service.runtime.index.dense_search("restart", query, 1)
        assert hits and second.service.runtime.index.get_chunks("restart", [hits[0][0]])[0].provenance.document_id == doc_id
