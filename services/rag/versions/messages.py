"""Protobuf <-> domain conversions of document versions and their comparison (mapping only)."""

from __future__ import annotations

from collections.abc import Sequence

from docuthinker.rag.v1 import documents_pb2, versions_pb2
from docuthinker.rag.v1 import rag_service_pb2 as pb
from services.rag.documents import DocumentRecord, Section
from services.rag.messages import document_pb, timestamp_pb
from services.rag.versions.diff import ChangeKind, Comparison, Passage
from services.rag.versions.model import DocumentVersion


def version_pb(version: DocumentVersion) -> versions_pb2.DocumentVersion:
    message = versions_pb2.DocumentVersion(
        version=version.version, state=int(version.state), filename=version.filename, file_type=version.file_type,
        content_type=version.content_type, content_sha256=version.content_sha256, size_bytes=version.size_bytes,
        page_count=version.page_count, title=version.title, chunk_count=version.chunk_count,
        chunks_embedded=version.chunks_embedded, chunks_reused=version.chunks_reused,
        create_time=timestamp_pb(version.create_time), error_message=version.error_message)
    if version.superseded_time is not None:
        message.superseded_time.CopyFrom(timestamp_pb(version.superseded_time))
    return message


def versions_pb(record: DocumentRecord, versions: Sequence[DocumentVersion]) -> pb.ListDocumentVersionsResponse:
    return pb.ListDocumentVersionsResponse(document=document_pb(record), versions=[version_pb(v) for v in versions])


def version_text_pb(version: DocumentVersion, sections: Sequence[Section]) -> pb.GetDocumentVersionTextResponse:
    return pb.GetDocumentVersionTextResponse(version=version_pb(version), sections=[
        pb.GetDocumentTextResponse.Section(page=s.page, sheet_name=s.sheet_name, heading_path=list(s.heading_path),
                                           text=s.text) for s in sections])


def passage_pb(document_id: str, filename: str, passage: Passage) -> versions_pb2.VersionPassage:
    return versions_pb2.VersionPassage(version=passage.version, text=passage.text, provenance=documents_pb2.Provenance(
        document_id=document_id, filename=filename, page=passage.page, sheet_name=passage.sheet_name,
        heading_path=list(passage.heading_path), char_start=passage.char_start, char_end=passage.char_end,
        version=passage.version))


def comparison_pb(comparison: Comparison, filenames: dict[int, str]) -> pb.CompareDocumentVersionsResponse:
    """``filenames``: each compared version's file name (a version may have been uploaded under another)."""
    changes = []
    for change in comparison.changes:
        item = versions_pb2.PassageChange(kind=int(change.kind), removed_words=list(change.removed_words),
                                          added_words=list(change.added_words))
        if change.before is not None:
            item.before.CopyFrom(passage_pb(comparison.document_id, filenames.get(change.before.version, ""),
                                            change.before))
        if change.after is not None:
            item.after.CopyFrom(passage_pb(comparison.document_id, filenames.get(change.after.version, ""),
                                           change.after))
        changes.append(item)
    return pb.CompareDocumentVersionsResponse(**{
        "document_id": comparison.document_id, "from": comparison.from_version, "to": comparison.to_version,
        "changes": changes, "added": comparison.count(ChangeKind.ADDED),
        "removed": comparison.count(ChangeKind.REMOVED), "changed": comparison.count(ChangeKind.CHANGED),
        "unchanged": comparison.unchanged})
