"""Upload validation: file names, type detection, size and emptiness checks."""

from __future__ import annotations

import grpc
import pytest

from services.rag.ingest.formats import FileType, detect_type, sanitize_filename, validate_upload
from services.runtime.errors import DomainError

MB = 1024 * 1024


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd.txt", "passwd.txt"),
        ("C:\\Users\\eve\\Desktop\\q3 results.xlsx", "q3 results.xlsx"),
        ("na\x00me\x1b[31m.md", "name_31m.md"),
        ("<b>alert(1)</b>.html", "b_.html"),
        ("<b onload=x>.html", "_b onload=x_.html"),
        ("...hidden.txt", "hidden.txt"),
        ("ｆｕｌｌｗｉｄｔｈ.txt", "fullwidth.txt"),
        ("résumé 2024.docx", "résumé 2024.docx"),
    ],
)
def test_sanitize_filename(raw: str, expected: str) -> None:
    assert sanitize_filename(raw) == expected


def test_sanitize_filename_truncates_long_names_and_keeps_the_extension() -> None:
    name = sanitize_filename("a" * 500 + ".pdf")
    assert name.endswith(".pdf") and len(name.encode()) <= 200


@pytest.mark.parametrize(
    ("filename", "content_type", "expected"),
    [
        ("a.PDF", "", FileType.PDF),
        ("a.htm", "application/octet-stream", FileType.HTML),
        ("a.markdown", "", FileType.MARKDOWN),
        ("a.tsv", "", FileType.TSV),
        ("noext", "text/csv; charset=utf-8", FileType.CSV),
        ("noext", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", FileType.XLSX),
        ("talk.M4A", "", FileType.AUDIO),
        ("clip.mov", "application/octet-stream", FileType.AUDIO),
        ("noext", "audio/ogg; codecs=opus", FileType.AUDIO),
    ],
)
def test_detect_type(filename: str, content_type: str, expected: FileType) -> None:
    assert detect_type(filename, content_type) is expected


@pytest.mark.parametrize(("filename", "content_type"), [("virus.exe", ""), ("movie.avi", "video/x-msvideo"), ("x", "")])
def test_unsupported_type_names_the_supported_ones(filename: str, content_type: str) -> None:
    with pytest.raises(DomainError) as caught:
        detect_type(filename, content_type)
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.reason == "UNSUPPORTED_FILE_TYPE"
    for name in ("PDF", ".docx", ".xlsx", ".csv", ".html", ".md", ".txt"):
        assert name in caught.value.message


def test_too_large_is_resource_exhausted() -> None:
    with pytest.raises(DomainError) as caught:
        validate_upload("a.txt", "", b"x" * (MB + 1), max_bytes=MB)
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.reason == "UPLOAD_TOO_LARGE"


def test_empty_is_rejected() -> None:
    with pytest.raises(DomainError) as caught:
        validate_upload("a.txt", "text/plain", b"", max_bytes=MB)
    assert (caught.value.code, caught.value.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "EMPTY_DOCUMENT")


@pytest.mark.parametrize(("filename", "data"), [("a.pdf", b"hello, not a pdf"), ("a.docx", b"%PDF-1.7 nope")])
def test_wrong_signature_is_corrupt(filename: str, data: bytes) -> None:
    with pytest.raises(DomainError) as caught:
        validate_upload(filename, "", data, max_bytes=MB)
    assert (caught.value.code, caught.value.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "CORRUPT_FILE")


def test_declared_content_type_is_kept_only_when_it_matches() -> None:
    assert validate_upload("a.csv", "application/x-www-form-urlencoded", b"a,b", MB).content_type == "text/csv"
    assert validate_upload("a.csv", "application/csv", b"a,b", MB).content_type == "application/csv"
    assert validate_upload("", "text/markdown", b"# x", MB).filename == "upload.md"


FORM = (b"--------------------------d74496d66958873e\r\n"
        b'Content-Disposition: form-data; name="file"; filename="notes.txt"\r\n'
        b"Content-Type: text/plain\r\n\r\nThe quarterly figures.\r\n"
        b"--------------------------d74496d66958873e--\r\n")


@pytest.mark.parametrize("content_type", [
    "multipart/form-data; boundary=------------------------d74496d66958873e",  # what curl -F declares
    "text/plain",  # a client that declared the wrong type
    "",
])
def test_a_multipart_form_body_is_refused_not_stored_as_text(content_type: str) -> None:
    with pytest.raises(DomainError) as caught:
        validate_upload("notes.txt", content_type, FORM, 1 << 20)
    assert (caught.value.code, caught.value.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "MULTIPART_NOT_SUPPORTED")


def test_text_that_mentions_form_data_is_still_text() -> None:
    text = b"Our API accepts\r\nContent-Disposition: form-data headers in multipart bodies.\n"
    assert validate_upload("notes.txt", "text/plain", text, 1 << 20).file_type is FileType.TEXT
