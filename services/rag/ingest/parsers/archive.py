"""Zip-bomb checks for Office Open XML files, run before any XML is inflated.

``zipfile`` never inflates a member past its declared size (it truncates and then fails the
CRC check), so bounding the declared sizes and ratios bounds the memory a parser can use.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile

from services.rag.ingest.formats import corrupt
from services.rag.ingest.parsers.limits import ParseLimits, too_large

OOXML_MAIN = "officeDocument"
"""``required`` for Office Open XML: the package's main part, wherever its relationships put it."""
_OFFICE_DOCUMENT = re.compile(
    rb'<Relationship\b[^>]*\bType="[^"]*/officeDocument"[^>]*>|<Relationship\b[^>]*\bTarget="[^"]*"[^>]*'
    rb'\bType="[^"]*/officeDocument"', re.S)
_TARGET = re.compile(rb'\bTarget="([^"]*)"')
_MAIN_TYPES = {"docx": ("wordprocessingml.document",), "xlsx": ("spreadsheetml.sheet", "spreadsheetml.template"),
               "pptx": ("presentationml.presentation", "presentationml.slideshow")}
"""What the main part's content type says of each kind ([Content_Types].xml)."""
_MAX_MEMBERS = 10_000
_RATIO_FLOOR_BYTES = 1 << 20


def main_part(archive: zipfile.ZipFile) -> str | None:
    """The Office Open XML main part named by the package relationships (``_rels/.rels``), as Excel finds it.

    Most writers put it at ``xl/workbook.xml``, ``word/document.xml`` or ``ppt/presentation.xml``; open-data
    portals' writers put the workbook at the root: the relationship, not the folder, says where it is.
    """
    try:
        rels = archive.read("_rels/.rels")
    except KeyError:
        return None
    match = _OFFICE_DOCUMENT.search(rels)
    target = _TARGET.search(match.group(0)) if match else None
    if target is None:
        return None
    return posixpath.normpath(target.group(1).decode("utf-8", "replace").lstrip("/"))


def _main_type_is(archive: zipfile.ZipFile, main: str, kinds: tuple[str, ...]) -> bool:
    try:
        types = archive.read("[Content_Types].xml")
    except KeyError:
        return False
    override = re.search(rb'<Override\b[^>]*PartName="/' + re.escape(main.encode()) + rb'"[^>]*>', types)
    declared = re.search(rb'ContentType="([^"]*)"', override.group(0)) if override else None
    return declared is not None and any(k.encode() in declared.group(1) for k in kinds)


def open_office_archive(data: bytes, kind: str, required: str, limits: ParseLimits) -> zipfile.ZipFile:
    """Opens and vets the archive; ``required`` is a member every file of this kind has (``OOXML_MAIN``: the
    package's main part, found through its relationships)."""
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
    if required == OOXML_MAIN:
        main = main_part(archive)
        if main is None or main not in archive.namelist():
            raise corrupt(kind, "the package names no main document part that it holds (_rels/.rels)")
        if not _main_type_is(archive, main, _MAIN_TYPES.get(str(kind).lower(), ())):
            raise corrupt(kind, f"its main part /{main} is not a {str(kind).upper()} document")
    elif required not in archive.namelist():
        raise corrupt(kind, f"the archive has no {required}")
    return archive
