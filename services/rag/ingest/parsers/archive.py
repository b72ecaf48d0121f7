"""Zip-bomb checks for Office Open XML files, run before any XML is inflated.

``zipfile`` never inflates a member past its declared size (it truncates and then fails the
CRC check), so bounding the declared sizes and ratios bounds the memory a parser can use.
"""

from __future__ import annotations

import io
import zipfile

from services.rag.ingest.formats import corrupt
from services.rag.ingest.parsers.limits import ParseLimits, too_large

_MAX_MEMBERS = 10_000
_RATIO_FLOOR_BYTES = 1 << 20


def open_office_archive(data: bytes, kind: str, required: str, limits: ParseLimits) -> zipfile.ZipFile:
    """Opens and vets the archive; ``required`` is a member every file of this kind has."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise corrupt(kind, f"broken ZIP container ({exc})") from exc
    if len(members) > _MAX_MEMBERS:
        raise too_large("archive members", _MAX_MEMBERS, "ARCHIVE_TOO_MANY_MEMBERS")
    total = 0
    for member in members:
        if member.flag_bits & 0x1:
            raise corrupt(kind, "it contains encrypted members")
        total += member.file_size
        if total > limits.max_unzipped_bytes:
            raise too_large("uncompressed bytes (zip bomb?)", limits.max_unzipped_bytes, "ARCHIVE_TOO_LARGE")
        if member.file_size > _RATIO_FLOOR_BYTES:
            ratio = member.file_size / max(member.compress_size, 1)
            if ratio > limits.max_compression_ratio:
                raise too_large(
                    f"compression ratio ({member.filename} inflates {ratio:.0f}x; zip bomb?)",
                    limits.max_compression_ratio,
                    "ARCHIVE_COMPRESSION_RATIO",
                )
    if required not in archive.namelist():
        raise corrupt(kind, f"the archive has no {required}")
    return archive
