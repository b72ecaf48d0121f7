"""The ingestion pipeline over real stores with a fake embedder: events, idempotency,
atomicity under injected failures, bad input, crash recovery, re-index; on both backends."""

from __future__ import annotations

import asyncio
import hashlib
import threading

import grpc
import pytest

from services.rag.documents import DocumentStatus, IngestOutcome, IngestProgress, IngestStage, document_id_for
from services.rag.ingest import preparation
from services.runtime.errors import DomainError

from .factories import make_pdf, make_scanned_pdf
from .fakes import FailingEmbedder, GatedEmbedder, HashEmbedder
from .probes import blobs_held, collect, held_by_each_store, vectors_held

pytestmark = pytest.mark.store_backends  # every test that opens a runtime runs on both backends

TEXT = "\n\n".join(
    f"Site {i} report. Turbine blades at site {i} are inspected every six months. "
    f"The crew of site {i} logged {i * 3} findings, mostly minor corrosion near the blade roots."
    for i in range(60)
)


async def _upload(runtime, data: bytes = TEXT.encode(), name: str = "notes.txt", tenant: str = "acme"):
    return await collect(runtime.pipeline.upload(tenant, name, "text/plain", data))


async def test_events_then_a_ready_document(open_runtime) -> None:
    runtime = open_runtime()
    events = await _upload(runtime)
    stages = [e.stage for e in events if isinstance(e, IngestProgress)]
    assert stages[:3] == [IngestStage.RECEIVED, IngestStage.PARSED, IngestStage.CHUNKED]
    assert stages[-1] == IngestStage.INDEXED
    embedded = [e for e in events if isinstance(e, IngestProgress) and e.stage == IngestStage.EMBEDDED]
    assert len(embedded) > 1 and embedded[-1].done == embedded[-1].total
    assert [e.done for e in embedded] == sorted(e.done for e in embedded)
    outcome = events[-1]
    assert isinstance(outcome, IngestOutcome) and not outcome.duplicate
    document = outcome.document
    assert document.status is DocumentStatus.READY and document.chunk_count == embedded[-1].total
    assert document.content_sha256 == hashlib.sha256(TEXT.encode()).hexdigest()
    assert document.document_id == document_id_for("acme", document.content_sha256)
    # Each chunk's offsets slice its section's stored text exactly.
    sections = runtime.metadata.sections(document.document_id)
    for chunk in runtime.metadata.document_chunks("acme", document.document_id):
        section = sections[chunk.provenance.section_index]
        assert section.text[chunk.provenance.char_start : chunk.provenance.char_end] == chunk.text


async def test_same_bytes_twice_is_one_document(open_runtime) -> None:
    runtime = open_runtime()
    first = (await _upload(runtime))[-1]
    rows_before = len(runtime.metadata.known_chunk_ids())
    second = await _upload(runtime, name="renamed.txt")
    assert len(second) == 1 and second[0].duplicate
    assert second[0].document.document_id == first.document.document_id
    assert second[0].document.filename == "notes.txt"  # the stored document, unchanged
    assert len(runtime.metadata.known_chunk_ids()) == rows_before
    assert len(runtime.vectors.stored_ids("acme")) == rows_before
    assert runtime.metadata.count_documents("acme") == 1


async def test_concurrent_identical_uploads(open_runtime) -> None:
    runtime = open_runtime()
    a, b = await asyncio.gather(_upload(runtime), _upload(runtime))
    assert sorted([a[-1].duplicate, b[-1].duplicate]) == [False, True]
    assert runtime.metadata.count_documents("acme") == 1


async def test_same_bytes_in_another_tenant_is_another_document(open_runtime) -> None:
    runtime = open_runtime()
    a = (await _upload(runtime, tenant="acme"))[-1]
    b = (await _upload(runtime, tenant="globex"))[-1]
    assert not b.duplicate and a.document.document_id != b.document.document_id


async def test_nothing_is_visible_while_embedding(open_runtime) -> None:
    gate = GatedEmbedder()
    runtime = open_runtime(gate)
    task = asyncio.create_task(_upload(runtime))
    await asyncio.to_thread(gate.entered.wait, 10)
    doc_id = document_id_for("acme", hashlib.sha256(TEXT.encode()).hexdigest())
    assert runtime.metadata.get_document("acme", doc_id).status is DocumentStatus.EMBEDDING
    assert runtime.index.keyword_search("acme", "turbine", 5) == []
    assert runtime.index.dense_search("acme", HashEmbedder().encode(["turbine"])[0], 5) == []
    gate.release.set()
    events = await task
    assert events[-1].document.status is DocumentStatus.READY
    assert runtime.index.keyword_search("acme", "turbine", 5)


async def test_failure_midway_leaves_nothing_visible(open_runtime) -> None:
    runtime = open_runtime(FailingEmbedder(fail_on=2))
    events = []
    with pytest.raises(RuntimeError, match="injected"):
        async for event in runtime.pipeline.upload("acme", "notes.txt", "text/plain", TEXT.encode()):
            events.append(event)
    assert any(isinstance(e, IngestProgress) and e.stage == IngestStage.EMBEDDED for e in events)
    doc_id = document_id_for("acme", hashlib.sha256(TEXT.encode()).hexdigest())
    record = runtime.metadata.get_document("acme", doc_id)
    assert record.status is DocumentStatus.FAILED and "RuntimeError" in record.error_message
    assert runtime.metadata.known_chunk_ids() == set()
    assert set(vectors_held(runtime, "acme").values()) == {0}
    assert runtime.index.keyword_search("acme", "turbine", 5) == []
    assert runtime.blobs.exists("acme", record.content_sha256)  # kept: a re-index can retry


async def test_failure_while_indexing_removes_written_vectors(open_runtime, monkeypatch) -> None:
    runtime = open_runtime()

    def broken_publish(*args, **kwargs):
        raise OSError("disk full (injected)")

    monkeypatch.setattr(runtime.metadata, "publish", broken_publish)
    with pytest.raises(OSError):
        await _upload(runtime)
    assert set(vectors_held(runtime, "acme").values()) == {0}
    (record,) = runtime.metadata.list_documents("acme", 10)
    assert record.status is DocumentStatus.FAILED
    monkeypatch.undo()
    # The same bytes again: the failed document is retried, not reported as a duplicate.
    retry = await _upload(runtime)
    assert retry[-1].document.status is DocumentStatus.READY and not retry[-1].duplicate
    ids = [c.chunk_id for c in runtime.metadata.document_chunks("acme", record.document_id)]
    assert set(held_by_each_store(runtime, "acme", ids).values()) == {len(ids)} and ids


@pytest.mark.parametrize(
    ("name", "data", "code"),
    [
        ("scan.pdf", make_pdf([[]]), grpc.StatusCode.INVALID_ARGUMENT),
        ("locked.pdf", make_pdf([["x"]], user_password="u", owner_password="o"), grpc.StatusCode.FAILED_PRECONDITION),
        ("broken.pdf", b"%PDF-1.4 broken", grpc.StatusCode.INVALID_ARGUMENT),
        ("blank.txt", b"   \n\n ", grpc.StatusCode.INVALID_ARGUMENT),
        ("empty.txt", b"", grpc.StatusCode.INVALID_ARGUMENT),
        ("tool.exe", b"MZ\x90\x00", grpc.StatusCode.INVALID_ARGUMENT),
        ("huge.txt", b"x" * (3 * 1024 * 1024), grpc.StatusCode.INVALID_ARGUMENT),
    ],
)
async def test_bad_input_fails_before_any_event_and_stores_nothing(open_runtime, name, data, code) -> None:
    runtime = open_runtime()
    events = []
    with pytest.raises(DomainError) as caught:
        async for event in runtime.pipeline.upload("acme", name, "", data):
            events.append(event)
    assert events == [] and caught.value.code == code
    assert runtime.metadata.count_documents("acme") == 0
    assert blobs_held(runtime, "acme") == 0


async def test_interrupted_ingest_resumes_after_restart(open_runtime) -> None:
    gate = GatedEmbedder()
    runtime = open_runtime(gate)
    task = asyncio.create_task(_upload(runtime))
    await asyncio.to_thread(gate.entered.wait, 10)
    await runtime.pipeline.close()  # shutdown mid-embedding
    with pytest.raises(DomainError, match="interrupted"):
        await task
    gate.release.set()
    (stuck,) = runtime.metadata.list_documents("acme", 10)
    assert stuck.status is DocumentStatus.EMBEDDING
    await runtime.close()  # as the service shuts down

    restarted = open_runtime()
    assert await restarted.pipeline.resume_unfinished() == 1
    record = restarted.metadata.get_document("acme", stuck.document_id)
    assert record.status is DocumentStatus.READY and record.chunk_count > 0
    assert restarted.index.keyword_search("acme", "turbine", 3)


async def test_stuck_document_without_bytes_is_marked_failed(open_runtime) -> None:
    gate = GatedEmbedder()
    runtime = open_runtime(gate)
    task = asyncio.create_task(_upload(runtime))
    await asyncio.to_thread(gate.entered.wait, 10)
    await runtime.pipeline.close()
    gate.release.set()
    with pytest.raises(DomainError):
        await task
    (stuck,) = runtime.metadata.list_documents("acme", 10)
    runtime.blobs.delete("acme", stuck.content_sha256)
    await runtime.close()  # as the service shuts down

    restarted = open_runtime()
    await restarted.pipeline.resume_unfinished()
    record = restarted.metadata.get_document("acme", stuck.document_id)
    assert record.status is DocumentStatus.FAILED and "original bytes missing" in record.error_message


async def test_reindex_uses_current_settings_and_replaces_chunks(open_runtime) -> None:
    runtime = open_runtime(chunk_size=900, chunk_overlap=100)
    document = (await _upload(runtime))[-1].document
    old_ids = [c.chunk_id for c in runtime.metadata.document_chunks("acme", document.document_id)]
    await runtime.close()  # as the service shuts down

    smaller = open_runtime(chunk_size=300, chunk_overlap=0)
    record = await smaller.pipeline.reindex("acme", document.document_id)
    assert record.status is DocumentStatus.READY and record.chunk_count > len(old_ids)
    assert record.create_time == document.create_time
    new_ids = [c.chunk_id for c in smaller.metadata.document_chunks("acme", document.document_id)]
    assert len(smaller.vectors.stored_ids("acme", document.document_id)) == len(new_ids)
    with pytest.raises(DomainError) as caught:
        await smaller.pipeline.reindex("acme", "missing")
    assert caught.value.code == grpc.StatusCode.NOT_FOUND


async def test_delete_removes_every_trace(open_runtime) -> None:
    runtime = open_runtime()
    document = (await _upload(runtime))[-1].document
    ids = [c.chunk_id for c in runtime.metadata.document_chunks("acme", document.document_id)]
    assert await runtime.catalog.delete("acme", document.document_id) == len(ids)
    assert set(held_by_each_store(runtime, "acme", ids).values()) == {0}
    assert not runtime.blobs.exists("acme", document.content_sha256)
    with pytest.raises(DomainError) as caught:
        await runtime.catalog.get("acme", document.document_id)
    assert caught.value.code == grpc.StatusCode.NOT_FOUND


async def test_list_pages_newest_first(open_runtime) -> None:
    runtime = open_runtime()
    for i in range(5):
        await _upload(runtime, f"Document number {i} about topic {i}.".encode(), name=f"d{i}.txt")
    seen, token = [], ""
    while True:
        page = await runtime.catalog.list("acme", 2, token)
        assert page.total_size == 5 and len(page.documents) <= 2
        seen += [d.filename for d in page.documents]
        token = page.next_page_token
        if not token:
            break
    assert seen == ["d4.txt", "d3.txt", "d2.txt", "d1.txt", "d0.txt"]
    assert (await runtime.catalog.list("globex", 0, "")).documents == ()
    for size, token in ((-1, ""), (10, "not-a-token")):
        with pytest.raises(DomainError) as caught:
            await runtime.catalog.list("acme", size, token)
        assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT


async def test_text_of_a_failed_document_is_a_failed_precondition(open_runtime) -> None:
    runtime = open_runtime(FailingEmbedder(fail_on=1))
    with pytest.raises(RuntimeError):
        await _upload(runtime)
    (record,) = runtime.metadata.list_documents("acme", 10)
    with pytest.raises(DomainError) as caught:
        await runtime.catalog.text("acme", record.document_id)
    assert caught.value.code == grpc.StatusCode.FAILED_PRECONDITION


async def test_one_failing_resume_does_not_strand_the_others(open_runtime) -> None:
    gate = GatedEmbedder()
    runtime = open_runtime(gate)
    tasks = [asyncio.create_task(_upload(runtime, TEXT.encode(), "a.txt")),
             asyncio.create_task(_upload(runtime, (TEXT + " More.").encode(), "b.txt"))]
    while len(runtime.metadata.unfinished_documents()) < 2 or not gate.entered.is_set():
        await asyncio.sleep(0.05)
    await runtime.pipeline.close()
    gate.release.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert len(runtime.metadata.unfinished_documents()) == 2
    await runtime.close()  # as the service shuts down

    restarted = open_runtime(FailingEmbedder(fail_on=1))  # the first resumed document fails
    assert await restarted.pipeline.resume_unfinished() == 2
    statuses = sorted(d.status.name for d in restarted.metadata.list_documents("acme", 10))
    assert statuses == ["FAILED", "READY"]


async def test_a_scan_streams_ocr_progress_before_it_is_parsed(open_runtime) -> None:
    runtime = open_runtime()
    events = await _upload(runtime, make_scanned_pdf([["Pier nine opens at dawn."], None, ["Pier ten at noon."]]),
                           name="piers.pdf")
    progress = [(e.stage, e.done, e.total) for e in events if isinstance(e, IngestProgress)]
    assert progress[:5] == [(IngestStage.RECEIVED, progress[0][1], progress[0][1]), (IngestStage.OCR, 0, 2),
                            (IngestStage.OCR, 1, 2), (IngestStage.OCR, 2, 2), (IngestStage.PARSED, 3, 3)]
    assert [stage for stage, _, _ in progress].count(IngestStage.RECEIVED) == 1
    assert events[-1].document.status is DocumentStatus.READY and events[-1].document.page_count == 3


async def test_an_ocr_failure_after_the_stream_started_is_reported_in_it_and_stores_nothing(open_runtime) -> None:
    runtime = open_runtime(ocr_page_timeout_s=0.001)
    events = []
    with pytest.raises(DomainError) as caught:
        async for event in runtime.pipeline.upload("acme", "slow.pdf", "", make_scanned_pdf([["too slow"]])):
            events.append(event)
    assert [e.stage for e in events] == [IngestStage.RECEIVED, IngestStage.OCR]
    assert (caught.value.code, caught.value.reason) == (grpc.StatusCode.DEADLINE_EXCEEDED, "OCR_TIMEOUT")
    assert runtime.metadata.count_documents("acme") == 0



def _gate_parsing(monkeypatch) -> tuple[threading.Event, threading.Event]:
    """Parsing waits on ``release`` after setting ``entered``: a service that dies there died parsing."""
    entered, release = threading.Event(), threading.Event()
    real = preparation.parse_or_refuse

    def gated(*args, **kwargs):
        entered.set()
        release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(preparation, "parse_or_refuse", gated)
    return entered, release


async def test_a_document_whose_parse_was_interrupted_twice_is_not_resumed(open_runtime, monkeypatch) -> None:
    entered, release = _gate_parsing(monkeypatch)
    runtime = open_runtime()
    upload = asyncio.create_task(_upload(runtime))
    await asyncio.to_thread(entered.wait, 10)
    await runtime.pipeline.close()  # the service dies while parsing (once)
    with pytest.raises(DomainError):
        await upload
    (stuck,) = runtime.metadata.list_documents("acme", 10)
    assert stuck.status is DocumentStatus.PARSING
    await runtime.close()  # as the service shuts down

    entered.clear()
    restarted = open_runtime()
    sweep = asyncio.create_task(restarted.pipeline.resume_unfinished())
    await asyncio.to_thread(entered.wait, 10)
    await restarted.pipeline.close()  # and again, resuming it
    await sweep
    assert restarted.metadata.parse_attempts("acme", stuck.document_id) == 2
    await restarted.close()

    entered.clear()
    third = open_runtime()
    await third.pipeline.resume_unfinished()
    assert not entered.is_set()  # not parsed a third time
    record = third.metadata.get_document("acme", stuck.document_id)
    assert record.status is DocumentStatus.FAILED and "interrupted 2 times" in record.error_message
    release.set()


async def test_a_parse_that_finishes_clears_its_attempts(open_runtime) -> None:
    runtime = open_runtime()
    document = (await _upload(runtime))[-1].document
    assert runtime.metadata.parse_attempts("acme", document.document_id) == 0


async def test_a_refused_document_left_by_a_crash_is_failed_not_parsed_again(open_runtime, monkeypatch) -> None:
    runtime = open_runtime()

    def crash(record) -> None:
        raise SystemExit("the service died before it forgot the refused bytes")

    monkeypatch.setattr(runtime.pipeline, "_forget", crash)
    with pytest.raises(SystemExit):
        await _upload(runtime, b"%PDF-1.4 not really a pdf", "broken.pdf")
    (left,) = runtime.metadata.list_documents("acme", 10)
    await runtime.close()  # as the service shuts down

    entered, release = _gate_parsing(monkeypatch)
    restarted = open_runtime()
    await restarted.pipeline.resume_unfinished()
    assert not entered.is_set()
    record = restarted.metadata.get_document("acme", left.document_id)
    assert record.status is DocumentStatus.FAILED and "not a readable PDF" in record.error_message
    release.set()
