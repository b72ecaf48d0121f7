"""Reading a document's versions: the list, one version's bytes, text and chunks, and a comparison of two."""

from __future__ import annotations

import asyncio

from services.rag.catalog import DocumentCatalog
from services.rag.documents import Chunk, DocumentRecord, Section
from services.rag.store.ports import BlobPort, MetadataPort
from services.rag.versions.diff import Comparison, compare
from services.rag.versions.model import DocumentVersion, VersionState
from services.runtime.errors import FailedPrecondition, FieldViolation, InvalidArgument, NotFound

READABLE = (VersionState.LIVE, VersionState.SUPERSEDED)


def version_not_found(document_id: str, version: int) -> NotFound:
    return NotFound(f"document {document_id!r} has no version {version}", reason="VERSION_NOT_FOUND",
                    metadata={"document_id": document_id, "version": str(version)})


def _check_number(field: str, value: int) -> None:
    if value < 0:
        raise InvalidArgument(f"{field} must be a version number (1 or more), or 0 for the default",
                              reason="INVALID_VERSION", violations=[FieldViolation(field, "must be >= 0")])


class VersionCatalog:
    def __init__(self, catalog: DocumentCatalog, metadata: MetadataPort, blobs: BlobPort) -> None:
        self._catalog = catalog
        self._metadata = metadata
        self._blobs = blobs

    async def versions(self, tenant: str, document_id: str) -> tuple[DocumentRecord, list[DocumentVersion]]:
        """The document and its versions, newest first (NOT_FOUND for an unknown or another tenant's id)."""
        record = await self._catalog.get(tenant, document_id)
        return record, await asyncio.to_thread(self._metadata.versions, tenant, document_id)

    async def version(self, tenant: str, document_id: str, version: int, field: str = "version") -> DocumentVersion:
        """One version; 0 means the live one."""
        _check_number(field, version)
        record, versions = await self.versions(tenant, document_id)
        number = version or record.version
        for found in versions:
            if found.version == number:
                return found
        raise version_not_found(document_id, number)

    async def content(self, tenant: str, document_id: str, version: int) -> tuple[DocumentVersion, bytes]:
        """The original bytes of one version (every version keeps them until the document is deleted)."""
        found = await self.version(tenant, document_id, version)
        data = await asyncio.to_thread(self._blobs.get, tenant, found.content_sha256)
        if data is None:
            raise NotFound(f"the original file of version {found.version} of document {document_id!r} is no longer "
                           "stored", reason="CONTENT_NOT_FOUND",
                           metadata={"document_id": document_id, "version": str(found.version)})
        return found, data

    async def text(self, tenant: str, document_id: str, version: int) -> tuple[DocumentVersion, list[Section]]:
        """The extracted text of a published version (FAILED_PRECONDITION for one not indexed)."""
        found = await self._readable(tenant, document_id, version)
        if found.state is VersionState.LIVE:
            sections = await asyncio.to_thread(self._metadata.sections, document_id)
        else:
            sections = await asyncio.to_thread(self._metadata.version_sections, tenant, document_id, found.version)
        return found, sections

    async def chunks(self, tenant: str, document_id: str, version: int) -> list[Chunk]:
        found = await self._readable(tenant, document_id, version)
        if found.state is VersionState.LIVE:
            return await asyncio.to_thread(self._metadata.document_chunks, tenant, document_id)
        return await asyncio.to_thread(self._metadata.archived_chunks, tenant, document_id, found.version)

    async def compare(self, tenant: str, document_id: str, from_version: int = 0,
                      to_version: int = 0) -> Comparison:
        """Changes from one published version to another: ``to_version`` 0 is the live version, ``from_version``
        0 the published version before ``to_version``."""
        _check_number("from", from_version)
        _check_number("to", to_version)
        record, versions = await self.versions(tenant, document_id)
        published = sorted(v.version for v in versions if v.state in READABLE)
        to = to_version or record.version
        if from_version:
            start = from_version
        else:
            earlier = [v for v in published if v < to]
            if not earlier:
                raise FailedPrecondition(f"document {document_id!r} has no version before version {to} to compare "
                                         "with", reason="NO_EARLIER_VERSION",
                                         metadata={"document_id": document_id, "version": str(to)})
            start = earlier[-1]
        _, before = await self.text(tenant, document_id, start)
        _, after = await self.text(tenant, document_id, to)
        return await asyncio.to_thread(compare, document_id, before, after, start, to)

    async def _readable(self, tenant: str, document_id: str, version: int) -> DocumentVersion:
        found = await self.version(tenant, document_id, version)
        if found.state not in READABLE:
            raise FailedPrecondition(
                f"version {found.version} of document {document_id!r} is {found.state.name.lower()}, not indexed"
                + (f": {found.error_message}" if found.error_message else ""),
                reason="VERSION_NOT_READY",
                metadata={"document_id": document_id, "version": str(found.version), "state": found.state.name})
        return found
