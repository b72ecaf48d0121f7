"""gRPC transport of the document viewer's calls: ``LocateSpan`` and ``GetDocumentPreview`` (maps only)."""

from __future__ import annotations

import asyncio

from google.api import httpbody_pb2

from docuthinker.rag.v1 import rag_service_pb2 as pb
from services.rag.catalog import DocumentCatalog
from services.rag.viewing import previews
from services.rag.viewing.span_boxes import SpanLocator, locate
from services.runtime.errors import FieldViolation, InvalidArgument
from services.runtime.request_context import current_tenant


def _check(request: pb.LocateSpanRequest) -> None:
    violations = []
    if request.page < 1:
        violations.append(FieldViolation("page", "1 or more"))
    if not 0 <= request.char_start < request.char_end:
        violations.append(FieldViolation("char_end", "greater than char_start (both 0 or more)"))
    if request.answer_char_end and not request.char_start <= request.answer_char_start < request.answer_char_end:
        violations.append(FieldViolation("answer_char_start", "inside the span, before answer_char_end"))
    if violations:
        raise InvalidArgument("invalid span", reason="INVALID_SPAN", violations=violations)


class ViewingRpcs:
    """Mixed into ``RagServicer``: needs ``catalog`` and ``locator``."""

    catalog: DocumentCatalog
    locator: SpanLocator

    async def LocateSpan(self, request: pb.LocateSpanRequest, context) -> pb.LocateSpanResponse:
        _check(request)
        tenant = current_tenant()
        text = await self.catalog.text(tenant, request.document_id)
        sections = [s for s in text.sections if s.page in (request.page, 0) and len(s.text) >= request.char_end]
        if not sections:
            raise InvalidArgument(f"page {request.page} has no text span {request.char_start}-{request.char_end}",
                                  reason="INVALID_SPAN", violations=[FieldViolation("page", "a page of the document")])
        section = sections[0].text
        span = section[request.char_start:request.char_end]
        answer = section[request.answer_char_start:request.answer_char_end] if request.answer_char_end else ""
        record, data = await self.catalog.content(tenant, request.document_id)
        source, words = await asyncio.to_thread(self.locator.page_words, f"{tenant}/{record.content_sha256}", data,
                                                record.file_type, request.page)
        found = locate(words, span, answer, source)
        return pb.LocateSpanResponse(
            page=request.page, source=found.source, words_found=found.words_found, words_total=found.words_total,
            boxes=[pb.SpanBox(x0=b.x0, y0=b.y0, x1=b.x1, y1=b.y1, answer=b.answer) for b in found.boxes])

    async def GetDocumentPreview(self, request: pb.GetDocumentPreviewRequest, context) -> httpbody_pb2.HttpBody:
        record, data = await self.catalog.content(current_tenant(), request.document_id)
        if record.file_type not in previews.PREVIEWED:
            raise previews.unsupported(record.file_type)
        page = await asyncio.to_thread(previews.preview, data, record.file_type, record.filename)
        return httpbody_pb2.HttpBody(content_type="text/html; charset=utf-8", data=page.encode("utf-8"))
