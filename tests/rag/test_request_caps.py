"""Caller-controlled costs are capped with a clear error: characters per CSV record, chunks per document and per
tenant, document_ids and question length per request; a NOT_FOUND for many unknown ids stays small."""

from __future__ import annotations

import grpc
import pytest

from services.rag.answers.answering import unknown_documents, validate
from services.runtime.errors import DomainError, InvalidArgument, NotFound

from .probes import collect

PARAGRAPHS = "\n\n".join(f"Paragraph {i} says the pump at station {i} was serviced in spring." for i in range(40))


async def _refused(runtime, name: str, data: bytes, tenant: str = "acme") -> DomainError:
    with pytest.raises(DomainError) as caught:
        await collect(runtime.pipeline.upload(tenant, name, "", data))
    return caught.value


async def test_a_csv_record_past_the_line_limit_is_refused_as_the_files_property(open_runtime) -> None:
    runtime = open_runtime(max_record_chars=2048)
    error = await _refused(runtime, "one-line.csv", b"a,b\n" + b"x," * 5000 + b"y\n")
    assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "RECORD_TOO_LONG")
    assert "record 2" in error.message and error.metadata["limit"] == "2048"
    assert runtime.metadata.count_documents("acme") == 0
    ok = await collect(runtime.pipeline.upload("acme", "fine.csv", "", b"a,b\n1,2\n3,4\n"))
    assert ok[-1].document.chunk_count >= 1


async def test_chunks_per_document_and_per_tenant(open_runtime) -> None:
    runtime = open_runtime(max_chunks_per_document=3, chunk_size=200, chunk_overlap=0)
    error = await _refused(runtime, "long.txt", PARAGRAPHS.encode())
    assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "TOO_MANY_CHUNKS")
    assert runtime.metadata.count_documents("acme") == 0

    runtime = open_runtime(max_tenant_chunks=12, chunk_size=200, chunk_overlap=0)
    first = await collect(runtime.pipeline.upload("acme", "a.txt", "", PARAGRAPHS[:1500].encode()))
    stored = first[-1].document.chunk_count
    assert 0 < stored <= 12 and runtime.metadata.count_chunks("acme") == stored
    quota = await _refused(runtime, "b.txt", PARAGRAPHS[1500:].encode())
    assert (quota.code, quota.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "TENANT_CHUNK_QUOTA")
    assert quota.metadata["stored"] == str(stored) and quota.metadata["limit"] == "12"
    # Another tenant has its own quota.
    other = await collect(runtime.pipeline.upload("globex", "b.txt", "", PARAGRAPHS[1500:2500].encode()))
    assert other[-1].document.chunk_count > 0


def test_document_ids_and_question_length_per_request() -> None:
    with pytest.raises(InvalidArgument) as caught:
        validate("what?", 0, [f"d{i}" for i in range(11)], 50, max_document_ids=10)
    assert [v.field for v in caught.value.violations] == ["document_ids"]
    assert "at most 10" in caught.value.message
    validate("what?", 0, [f"d{i}" for i in range(10)], 50, max_document_ids=10)
    with pytest.raises(InvalidArgument, match="at most 20 characters"):
        validate("x" * 21, 0, [], 50, max_question_chars=20)


def test_many_unknown_ids_give_a_small_not_found() -> None:
    error = unknown_documents([f"doc-{i:04d}" for i in range(1500)])
    assert isinstance(error, NotFound)
    assert error.message.startswith("1500 unknown document id(s): doc-0000") and "and 1495 more" in error.message
    assert error.metadata["missing_count"] == "1500" and len(error.violations) == 5
    assert len(error.to_status_proto().SerializeToString()) < 1024
