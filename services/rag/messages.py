"""Protobuf <-> domain conversions for the documents API (no logic beyond the mapping)."""

from __future__ import annotations

from google.protobuf import timestamp_pb2

from docuthinker.rag.v1 import documents_pb2
from docuthinker.rag.v1 import rag_service_pb2 as pb
from services.rag.catalog import DocumentPage
from services.rag.documents import (
    DocumentRecord,
    DocumentText,
    IngestEvent,
    IngestOutcome,
    IngestProgress,
)


def timestamp_pb(seconds: float) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromNanoseconds(int(seconds * 1e9))
    return stamp


def document_pb(record: DocumentRecord) -> documents_pb2.Document:
    return documents_pb2.Document(
        document_id=record.document_id,
        tenant=record.tenant,
        filename=record.filename,
        file_type=record.file_type,
        content_type=record.content_type,
        status=int(record.status),
        error_message=record.error_message,
        size_bytes=record.size_bytes,
        page_count=record.page_count,
        sheet_names=list(record.sheet_names),
        content_sha256=record.content_sha256,
        chunk_count=record.chunk_count,
        create_time=timestamp_pb(record.create_time),
        update_time=timestamp_pb(record.update_time),
        graph_sync=int(record.graph_sync),
        title=record.title,
        version=record.version,
        document_key=record.key,
    )


def progress_pb(progress: IngestProgress) -> documents_pb2.IngestProgress:
    return documents_pb2.IngestProgress(
        stage=int(progress.stage), done=progress.done, total=progress.total, message=progress.message
    )


def result_pb(outcome: IngestOutcome) -> documents_pb2.IngestResult:
    return documents_pb2.IngestResult(document=document_pb(outcome.document), duplicate=outcome.duplicate,
                                      chunks_embedded=outcome.chunks_embedded, chunks_reused=outcome.chunks_reused)


def upload_event_pb(event: IngestEvent, message_type):
    """One event of an upload stream (UploadDocumentResponse or StreamUploadDocumentResponse)."""
    if isinstance(event, IngestOutcome):
        return message_type(done=result_pb(event))
    return message_type(progress=progress_pb(event))


def page_pb(page: DocumentPage) -> pb.ListDocumentsResponse:
    return pb.ListDocumentsResponse(
        documents=[document_pb(d) for d in page.documents],
        next_page_token=page.next_page_token,
        total_size=page.total_size,
    )


def text_pb(text: DocumentText) -> pb.GetDocumentTextResponse:
    return pb.GetDocumentTextResponse(
        document=document_pb(text.document),
        sections=[
            pb.GetDocumentTextResponse.Section(
                page=s.page, sheet_name=s.sheet_name, heading_path=list(s.heading_path), text=s.text
            )
            for s in text.sections
        ],
    )
