"""Document ingestion through the real Envoy gateway: raw-body uploads streamed back as SSE,
the documents API, duplicates, deletes that reach every index, and each bad input's HTTP status."""

from __future__ import annotations

import io
import json
import time
import zipfile

import httpx
import pytest

pytestmark = pytest.mark.e2e

TENANT = {"x-tenant-id": "ingestion-e2e"}
OTHER = {"x-tenant-id": "ingestion-e2e-other"}

GUIDE = b"""# Turbine maintenance guide

Every turbine blade is inspected every six months by the maintenance crew.

## Corrosion

Salt spray from the sea corrodes the blade roots; crews apply a zinc coating each spring.

| Site | Blades | Last inspection |
|------|--------|-----------------|
| Lyon | 42 | March |
| Brest | 18 | April |
"""
ORPHAN = b"The quartz lighthouse at Ushant signals with four white flashes every fifteen seconds.\n"


def sse_events(body: str) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in body.splitlines() if line.startswith("data: ")]


def upload(client: httpx.Client, name: str, data: bytes, content_type: str, headers=TENANT) -> httpx.Response:
    return client.post("/v1/documents", params={"filename": name}, content=data,
                       headers={**headers, "content-type": content_type})


def error_reason(reply: httpx.Response) -> str:
    for detail in reply.json().get("details", []):
        if detail.get("@type", "").endswith("google.rpc.ErrorInfo"):
            return detail["reason"]
    return ""


@pytest.fixture(scope="module")
def client(mesh):
    with mesh.http(timeout=180) as http:
        yield http


@pytest.fixture(scope="module")
def guide(client) -> dict:
    reply = upload(client, "guide.md", GUIDE, "text/markdown")
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/event-stream")
    events = sse_events(reply.text)
    progress = [e["progress"] for e in events[:-1]]
    stages = [p["stage"] for p in progress]
    assert stages[:3] == ["INGEST_STAGE_RECEIVED", "INGEST_STAGE_PARSED", "INGEST_STAGE_CHUNKED"]
    assert "INGEST_STAGE_EMBEDDED" in stages and stages[-1] == "INGEST_STAGE_INDEXED"
    embedded = [p for p in progress if p["stage"] == "INGEST_STAGE_EMBEDDED"]
    assert embedded[-1]["done"] == embedded[-1]["total"]  # int64 as JSON strings
    done = events[-1]["done"]
    assert done["duplicate"] is False
    return done["document"]


def test_upload_streams_progress_and_ends_with_the_document(guide) -> None:
    assert guide["status"] == "DOCUMENT_STATUS_READY"
    assert guide["filename"] == "guide.md" and guide["file_type"] == "markdown"
    assert guide["content_type"] == "text/markdown" and guide["size_bytes"] == str(len(GUIDE))
    assert int(guide["chunk_count"]) > 0 and guide["title"] == "Turbine maintenance guide"
    assert guide["graph_sync"] == "GRAPH_SYNC_STATUS_PENDING"  # synced in the background (test_graph_sync)


def test_list_get_and_text(client, guide) -> None:
    listed = client.get("/v1/documents", headers=TENANT, params={"page_size": 50})
    assert listed.status_code == 200, listed.text
    assert guide["document_id"] in [d["document_id"] for d in listed.json()["documents"]]
    got = client.get(f"/v1/documents/{guide['document_id']}", headers=TENANT)
    assert got.status_code == 200 and got.json()["document"]["content_sha256"] == guide["content_sha256"]
    text = client.get(f"/v1/documents/{guide['document_id']}/text", headers=TENANT).json()
    paths = [s["heading_path"] for s in text["sections"]]
    assert ["Turbine maintenance guide", "Corrosion"] in paths
    # Markdown tables are structured at ingestion: one `cell | cell` line per row (issue #14).
    assert "\nLyon | 42 | March" in text["sections"][-1]["text"]
    # Another tenant sees none of it.
    assert client.get(f"/v1/documents/{guide['document_id']}", headers=OTHER).status_code == 404
    assert guide["document_id"] not in [d["document_id"] for d in
                                        client.get("/v1/documents", headers=OTHER).json()["documents"]]


def test_duplicate_upload_returns_the_stored_document(client, guide) -> None:
    reply = upload(client, "copy-of-guide.md", GUIDE, "text/markdown")
    events = sse_events(reply.text)
    assert len(events) == 1 and events[0]["done"]["duplicate"] is True
    assert events[0]["done"]["document"]["document_id"] == guide["document_id"]
    assert events[0]["done"]["document"]["filename"] == "guide.md"
    ingest = client.post("/v1/documents:ingest", params={"filename": "again.md"}, content=GUIDE,
                         headers={**TENANT, "content-type": "text/markdown"})
    assert ingest.status_code == 200, ingest.text
    assert ingest.json()["result"]["duplicate"] is True


def test_non_streaming_upload_and_reindex(client) -> None:
    reply = client.post("/v1/documents:ingest", params={"filename": "memo.txt"},
                        content=b"A short memo about the Brest depot opening hours.",
                        headers={**TENANT, "content-type": "text/plain"})
    assert reply.status_code == 200, reply.text
    document = reply.json()["result"]["document"]
    assert document["status"] == "DOCUMENT_STATUS_READY"
    again = client.post(f"/v1/documents/{document['document_id']}:reindex", json={}, headers=TENANT)
    assert again.status_code == 200, again.text
    assert again.json()["document"]["status"] == "DOCUMENT_STATUS_READY"
    assert again.json()["document"]["create_time"] == document["create_time"]


def _search(client, query: str, fusion: str) -> list[dict]:
    reply = client.post("/v1/search", json={"query": query, "top_k": 10, "fusion": fusion}, headers=TENANT)
    assert reply.status_code == 200, reply.text
    return reply.json().get("results", [])


def _wait_until_routed(client, timeout_s: float = 30.0) -> None:
    """Envoy health-checks rag every 2 s; after a restart it routes again once a check passes."""
    deadline = time.monotonic() + timeout_s
    while client.get("/v1/documents", headers=TENANT).status_code != 200:
        assert time.monotonic() < deadline, "Envoy never routed to the restarted rag service"
        time.sleep(0.5)


def test_delete_removes_the_chunks_from_every_index(client, mesh, guide) -> None:
    document = sse_events(upload(client, "lighthouse.txt", ORPHAN, "text/plain").text)[-1]["done"]["document"]
    doc_id = document["document_id"]
    for fusion in ("FUSION_METHOD_DENSE_ONLY", "FUSION_METHOD_KEYWORD_ONLY"):
        hits = _search(client, "quartz lighthouse Ushant flashes", fusion)
        assert hits and hits[0]["provenance"]["document_id"] == doc_id

    deleted = client.delete(f"/v1/documents/{doc_id}", headers=TENANT)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["chunks_removed"] == int(document["chunk_count"])
    assert client.get(f"/v1/documents/{doc_id}", headers=TENANT).status_code == 404
    assert client.get(f"/v1/documents/{doc_id}/text", headers=TENANT).status_code == 404
    for fusion in ("FUSION_METHOD_DENSE_ONLY", "FUSION_METHOD_KEYWORD_ONLY"):  # live FAISS and BM25
        assert doc_id not in [h["provenance"]["document_id"] for h in _search(client, "quartz lighthouse", fusion)]
    assert client.delete(f"/v1/documents/{doc_id}", headers=TENANT).status_code == 404

    # After a restart FAISS is rebuilt from Chroma and BM25 loaded from disk: still nothing of it.
    mesh.stop_service("rag")
    mesh.start_service("rag")
    _wait_until_routed(client)
    for fusion in ("FUSION_METHOD_DENSE_ONLY", "FUSION_METHOD_KEYWORD_ONLY"):
        assert doc_id not in [h["provenance"]["document_id"] for h in _search(client, "quartz lighthouse", fusion)]
    assert any(h["provenance"]["filename"] == "guide.md"
               for h in _search(client, "turbine blade inspection", "FUSION_METHOD_DENSE_ONLY"))


def _encrypted_pdf() -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt(user_password="user", owner_password="owner", algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _blank_pdf() -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _docx_bomb() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<document/>")
        archive.writestr("word/media/bomb.bin", b"\0" * (64 * 1024 * 1024))
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "data", "content_type", "status", "reason", "says"),
    [
        ("virus.exe", b"MZ\x90\x00", "application/octet-stream", 400, "UNSUPPORTED_FILE_TYPE", ".docx"),
        ("empty.txt", b"", "text/plain", 400, "EMPTY_DOCUMENT", "empty"),
        ("broken.pdf", b"%PDF-1.7\nnot really a pdf", "application/pdf", 400, "CORRUPT_FILE", "PDF"),
        ("locked.pdf", _encrypted_pdf(), "application/pdf", 400, "ENCRYPTED_PDF", "encrypted"),
        ("scan.pdf", _blank_pdf(), "application/pdf", 400, "NO_EXTRACTABLE_TEXT", "no extractable text"),
        ("bomb.docx", _docx_bomb(), "application/octet-stream", 400, "ARCHIVE_COMPRESSION_RATIO", "zip bomb"),
        ("blank.md", b"  \n\n  \n", "text/markdown", 400, "NO_EXTRACTABLE_TEXT", "no extractable text"),
    ],
)
def test_bad_input_gets_its_http_status_and_stores_nothing(client, name, data, content_type, status, reason, says):
    before = client.get("/v1/documents", headers=TENANT, params={"page_size": 100}).json()["total_size"]
    reply = upload(client, name, data, content_type)
    assert reply.status_code == status, reply.text
    assert error_reason(reply) == reason and says in reply.json()["message"]
    assert client.get("/v1/documents", headers=TENANT, params={"page_size": 100}).json()["total_size"] == before


def test_unsafe_filename_is_sanitised(client) -> None:
    reply = upload(client, "../../etc/<cron>.txt", b"Harmless text with a hostile file name.", "text/plain")
    assert reply.status_code == 200, reply.text
    assert sse_events(reply.text)[-1]["done"]["document"]["filename"] == "_cron_.txt"


def test_body_over_the_limit_is_413_from_envoy(client, mesh) -> None:
    limit = int(mesh.env.get("DOCUTHINKER_MAX_UPLOAD_BYTES", 25 * 1024 * 1024))
    reply = upload(client, "huge.txt", b"a" * (limit + 1024), "text/plain")
    assert reply.status_code == 413, reply.text[:200]


def _scanned_page(line: str):
    from PIL import Image, ImageDraw, ImageFont

    page = Image.new("L", (1700, 2200), 255)
    ImageDraw.Draw(page).text((150, 200), line, font=ImageFont.load_default(size=40), fill=0)
    return page


def test_scans_are_read_by_ocr_and_cited_by_page(client) -> None:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    typed = PdfWriter()
    typed.add_blank_page(612, 792)
    writer.add_page(typed.pages[0])  # page 1: blank, neither text nor scan
    scan = io.BytesIO()
    _scanned_page("The ferry to Roscoff leaves at seven from pier nine.").save(scan, "PDF", resolution=200)
    writer.add_page(PdfReader(scan).pages[0])
    pdf = io.BytesIO()
    writer.write(pdf)
    events = sse_events(upload(client, "ferry-scan.pdf", pdf.getvalue(), "application/pdf").text)
    assert "done" in events[-1], events[-1]
    ocr = [(e["progress"]["done"], e["progress"]["total"]) for e in events
           if e.get("progress", {}).get("stage") == "INGEST_STAGE_OCR"]
    assert ocr == [("0", "1"), ("1", "1")]  # int64 as JSON strings
    hits = _search(client, "ferry Roscoff pier", "FUSION_METHOD_KEYWORD_ONLY")
    assert hits and hits[0]["provenance"]["filename"] == "ferry-scan.pdf"
    assert hits[0]["provenance"]["page"] == 2 and "Roscoff leaves at seven" in hits[0]["text"]

    photo = io.BytesIO()
    _scanned_page("Gate B closes twenty minutes before boarding.").save(photo, "PNG")
    reply = upload(client, "gate-notice.png", photo.getvalue(), "application/octet-stream")
    image_document = sse_events(reply.text)[-1]["done"]["document"]
    assert image_document["content_type"] == "image/png" and image_document["status"] == "DOCUMENT_STATUS_READY"
    text = client.get(f"/v1/documents/{image_document['document_id']}/text", headers=TENANT).json()
    assert "Gate B closes twenty minutes" in json.dumps(text)
