"""What an upload is: its sanitised file name, its normalised type, and whether we take it.

The type comes from the file extension, else the declared content type; the leading bytes
must then agree (a ``.pdf`` that is not a PDF is refused as corrupt, not parsed).
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from dataclasses import dataclass
from enum import StrEnum

from services.runtime.errors import FieldViolation, InvalidArgument

# Recordings: extension -> stored content type (the declared type is kept when it is one of these).
AUDIO_TYPES = {
    ".wav": "audio/wav", ".mp3": "audio/mpeg", ".m4a": "audio/mp4", ".aac": "audio/aac", ".ogg": "audio/ogg",
    ".oga": "audio/ogg", ".opus": "audio/ogg", ".flac": "audio/flac", ".webm": "video/webm", ".mp4": "video/mp4",
    ".mov": "video/quicktime",
}
AUDIO_CONTENT_TYPES = (
    *sorted(set(AUDIO_TYPES.values())), "audio/x-wav", "audio/wave", "audio/vnd.wave", "audio/mp3", "audio/x-m4a",
    "audio/opus", "audio/x-flac", "audio/webm",
)


class FileType(StrEnum):
    PDF = "pdf"
    DOCX = "docx"
    XLSX = "xlsx"
    CSV = "csv"
    TSV = "tsv"
    HTML = "html"
    MARKDOWN = "markdown"
    TEXT = "text"
    IMAGE = "image"
    """A scan or photo of a page (PNG, JPEG, TIFF, WebP): read by OCR."""
    AUDIO = "audio"
    """A recording (audio, or video with an audio track): transcribed (parsers/audio.py)."""
    PPTX = "pptx"
    XLS = "xls"
    ODT = "odt"
    ODS = "ods"
    EPUB = "epub"
    EML = "eml"
    RTF = "rtf"


_BY_EXTENSION = {
    ".pdf": FileType.PDF,
    ".docx": FileType.DOCX,
    ".xlsx": FileType.XLSX,
    ".csv": FileType.CSV,
    ".tsv": FileType.TSV,
    ".tab": FileType.TSV,
    ".html": FileType.HTML,
    ".htm": FileType.HTML,
    ".xhtml": FileType.HTML,
    ".md": FileType.MARKDOWN,
    ".markdown": FileType.MARKDOWN,
    ".txt": FileType.TEXT,
    ".text": FileType.TEXT,
    ".png": FileType.IMAGE,
    ".jpg": FileType.IMAGE,
    ".jpeg": FileType.IMAGE,
    ".tif": FileType.IMAGE,
    ".tiff": FileType.IMAGE,
    ".webp": FileType.IMAGE,
    **{ext: FileType.AUDIO for ext in AUDIO_TYPES},
    ".pptx": FileType.PPTX,
    ".xls": FileType.XLS,
    ".odt": FileType.ODT,
    ".ods": FileType.ODS,
    ".epub": FileType.EPUB,
    ".eml": FileType.EML,
    ".rtf": FileType.RTF,
}

_BY_CONTENT_TYPE = {
    "application/pdf": FileType.PDF,
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": FileType.DOCX,
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": FileType.XLSX,
    "text/csv": FileType.CSV,
    "application/csv": FileType.CSV,
    "text/tab-separated-values": FileType.TSV,
    "text/html": FileType.HTML,
    "application/xhtml+xml": FileType.HTML,
    "text/markdown": FileType.MARKDOWN,
    "text/x-markdown": FileType.MARKDOWN,
    "text/plain": FileType.TEXT,
    "image/png": FileType.IMAGE,
    "image/jpeg": FileType.IMAGE,
    "image/tiff": FileType.IMAGE,
    "image/webp": FileType.IMAGE,
    **{media_type: FileType.AUDIO for media_type in AUDIO_CONTENT_TYPES},
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": FileType.PPTX,
    "application/vnd.ms-excel": FileType.XLS,
    "application/vnd.oasis.opendocument.text": FileType.ODT,
    "application/vnd.oasis.opendocument.spreadsheet": FileType.ODS,
    "application/epub+zip": FileType.EPUB,
    "message/rfc822": FileType.EML,
    "application/rtf": FileType.RTF,
    "text/rtf": FileType.RTF,
}

CANONICAL_CONTENT_TYPE = {
    FileType.PDF: "application/pdf",
    FileType.DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    FileType.XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    FileType.CSV: "text/csv",
    FileType.TSV: "text/tab-separated-values",
    FileType.HTML: "text/html",
    FileType.MARKDOWN: "text/markdown",
    FileType.TEXT: "text/plain",
    FileType.IMAGE: "image/png",
    FileType.AUDIO: "audio/mpeg",
    FileType.PPTX: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    FileType.XLS: "application/vnd.ms-excel",
    FileType.ODT: "application/vnd.oasis.opendocument.text",
    FileType.ODS: "application/vnd.oasis.opendocument.spreadsheet",
    FileType.EPUB: "application/epub+zip",
    FileType.EML: "message/rfc822",
    FileType.RTF: "application/rtf",
}

SUPPORTED_EXTENSIONS = tuple(sorted(_BY_EXTENSION))
SUPPORTED_DESCRIPTION = (
    "PDF (.pdf), Word (.docx), Excel (.xlsx), CSV (.csv), TSV (.tsv), HTML (.html, .htm), Markdown (.md), "
    "plain text (.txt), page images for OCR (.png, .jpg, .tiff, .webp), PowerPoint (.pptx), Excel 97-2003 (.xls), "
    "OpenDocument (.odt, .ods), EPUB (.epub), e-mail (.eml), RTF (.rtf), "
    "audio and video to transcribe (.wav, .mp3, .m4a, .aac, .ogg, .opus, .flac, .webm, .mp4, .mov)"
)

_IMAGE_SIGNATURES = (
    (lambda head: head.startswith(b"\x89PNG\r\n\x1a\n"), "image/png"),
    (lambda head: head.startswith(b"\xff\xd8\xff"), "image/jpeg"),
    (lambda head: head[:4] in (b"II*\x00", b"MM\x00*"), "image/tiff"),
    (lambda head: head[:4] == b"RIFF" and head[8:12] == b"WEBP", "image/webp"),
)

_MAX_NAME_BYTES = 200
_UNSAFE = re.compile(r"[^\w.\- ()+,=@]+")


@dataclass(frozen=True)
class Upload:
    """A validated upload, ready for the pipeline."""

    filename: str
    file_type: FileType
    content_type: str
    data: bytes


def sanitize_filename(raw: str) -> str:
    """A display-safe base name: no directories, control characters or shell-hostile symbols.

    The name is never used as a path (originals are stored by content hash); sanitising keeps
    logs, listings and downloads safe.
    """
    name = unicodedata.normalize("NFKC", raw or "")
    name = name.replace("\\", "/")
    name = posixpath.basename(name.rstrip("/"))
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C")
    name = _UNSAFE.sub("_", name).strip(" .")
    name = re.sub(r"_+", "_", name)
    if len(name.encode()) > _MAX_NAME_BYTES:
        stem, dot, ext = name.rpartition(".")
        ext = ext if dot and len(ext) <= 10 else ""
        budget = _MAX_NAME_BYTES - len(ext.encode()) - 1
        stem = (stem if dot else name).encode()[:budget].decode(errors="ignore")
        name = f"{stem}.{ext}" if ext else stem
    return name


def _extension(filename: str) -> str:
    _, dot, ext = filename.rpartition(".")
    return f".{ext.lower()}" if dot else ""


def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def detect_type(filename: str, content_type: str) -> FileType:
    by_ext = _BY_EXTENSION.get(_extension(filename))
    if by_ext is not None:
        return by_ext
    by_ct = _BY_CONTENT_TYPE.get(_media_type(content_type))
    if by_ct is not None and not _extension(filename):
        return by_ct
    described = _extension(filename) or _media_type(content_type) or "no extension and no content type"
    raise InvalidArgument(
        f"unsupported file type ({described}); supported types: {SUPPORTED_DESCRIPTION}",
        reason="UNSUPPORTED_FILE_TYPE",
        metadata={"supported": ",".join(SUPPORTED_EXTENSIONS)},
        violations=[FieldViolation("filename", f"extension must be one of {', '.join(SUPPORTED_EXTENSIONS)}")],
    )


def check_signature(file_type: FileType, data: bytes) -> None:
    head = data[:1024]
    if file_type is FileType.PDF and b"%PDF-" not in head:
        raise corrupt(file_type, "it does not start with a PDF header")
    if file_type in (FileType.DOCX, FileType.XLSX, FileType.PPTX) and not data.startswith(b"PK\x03\x04"):
        raise corrupt(file_type, "it is not a ZIP-based Office Open XML file")
    if file_type in (FileType.ODT, FileType.ODS, FileType.EPUB) and not data.startswith(b"PK\x03\x04"):
        raise corrupt(file_type, "it is not a ZIP container")
    if file_type is FileType.XLS and not data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        raise corrupt(file_type, "it is not an Excel 97-2003 (OLE2) workbook")
    if file_type is FileType.RTF and not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{\\rtf"):
        raise corrupt(file_type, "it does not start with {\\rtf")
    if file_type is FileType.IMAGE and _image_kind(head) is None:
        raise corrupt(file_type, "it is not a PNG, JPEG, TIFF or WebP image")


def _image_kind(head: bytes) -> str | None:
    """The media type of an image, from its leading bytes."""
    for matches, media_type in _IMAGE_SIGNATURES:
        if matches(head):
            return media_type
    return None


def corrupt(file_type: FileType | str, why: str) -> InvalidArgument:
    return InvalidArgument(
        f"the file is not a readable {str(file_type).upper()} document: {why}",
        reason="CORRUPT_FILE",
        metadata={"file_type": str(file_type)},
        violations=[FieldViolation("file", why)],
    )


def check_size(size: int, limit: int) -> None:
    if size > limit:
        raise InvalidArgument(
            f"the upload is larger than the {limit}-byte limit",
            reason="UPLOAD_TOO_LARGE",
            metadata={"limit_bytes": str(limit), "size_bytes": str(size)},
        )


_FORM_PART = re.compile(rb"\A(?:\r?\n)*--(\S{1,200})\r?\n(?:[!-9;-~]+:[^\r\n]*\r?\n){0,8}?"
                        rb"content-disposition:\s*form-data", re.IGNORECASE)


def check_not_a_form(content_type: str, data: bytes) -> None:
    """A browser form post (multipart/form-data) is not a document: stored as text it would index its
    boundaries and part headers, and a binary file inside it would be mangled. Refused whether it is
    declared or only looks like one (a client that dropped the header)."""
    declared = _media_type(content_type)
    if declared.startswith("multipart/") or _FORM_PART.match(data[:4096]):
        raise InvalidArgument(
            "the upload is a multipart/form-data body (a form post), not a document: send the file's own bytes "
            "as the request body (curl --data-binary @file, with ?filename=) ",
            reason="MULTIPART_NOT_SUPPORTED",
            metadata={"content_type": declared or "(sniffed)"},
            violations=[FieldViolation("file", "must be the document's raw bytes, not a multipart form")],
        )


def validate_upload(filename: str, content_type: str, data: bytes, max_bytes: int) -> Upload:
    """Checks everything that can be checked before parsing; raises a domain error otherwise."""
    check_size(len(data), max_bytes)
    check_not_a_form(content_type, data)
    safe_name = sanitize_filename(filename)
    file_type = detect_type(safe_name, content_type)
    if not safe_name or safe_name.startswith("."):
        safe_name = f"upload{_canonical_extension(file_type)}"
    if not data:
        raise InvalidArgument(
            "the document is empty (0 bytes)",
            reason="EMPTY_DOCUMENT",
            violations=[FieldViolation("file", "must not be empty")],
        )
    check_signature(file_type, data)
    if file_type is FileType.IMAGE:
        # An image's bytes say what it is, whatever its name or declared type.
        return Upload(safe_name, file_type, _image_kind(data[:16]) or CANONICAL_CONTENT_TYPE[file_type], data)
    if file_type is FileType.AUDIO and _BY_CONTENT_TYPE.get(_media_type(content_type)) is not file_type:
        return Upload(safe_name, file_type, AUDIO_TYPES.get(_extension(safe_name), "audio/mpeg"), data)
    # Keep the declared type only when it names the same format (curl sends form-urlencoded).
    declared = _media_type(content_type)
    stored_type = declared if _BY_CONTENT_TYPE.get(declared) is file_type else CANONICAL_CONTENT_TYPE[file_type]
    return Upload(safe_name, file_type, stored_type, data)


def _canonical_extension(file_type: FileType) -> str:
    special = {FileType.MARKDOWN: ".md", FileType.TEXT: ".txt", FileType.IMAGE: ".png"}
    return special.get(file_type, f".{file_type.value}")
