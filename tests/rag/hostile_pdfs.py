"""Hostile PDFs made at test time (never committed): small files whose content streams inflate to
hundreds of MB of operators, which PDFium would turn into gigabytes of page objects.

Each is a valid one-page PDF (catalog, page tree, Helvetica, one FlateDecode content stream), written
with ``zlib`` in steps so even a 400 MB stream costs the test a few MB of memory to make.
"""

from __future__ import annotations

import functools
import zlib

TEXT_OPERATOR = b"(AAAAAAAAAAAAAAAA) Tj\n"
"""16 characters shown per 22 bytes: ~15M characters for 20 MB of stream (PDFium: ~3.3 GB, 13 s, measured)."""
DRAW_OPERATOR = b"0 0 m 1 1 l S\n"
"""Three drawing operators per 14 bytes, no text."""


def _deflate(head: bytes, unit: bytes, inflated_bytes: int, tail: bytes) -> bytes:
    compressor = zlib.compressobj(9)
    parts = [compressor.compress(head)]
    block = unit * max(1, (1 << 20) // len(unit))
    for _ in range(max(1, inflated_bytes // len(block))):
        parts.append(compressor.compress(block))
    parts.append(compressor.compress(tail))
    parts.append(compressor.flush())
    return b"".join(parts)


def _pdf(objects: list[bytes]) -> bytes:
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _stream(data: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d /Filter /FlateDecode %s>>\nstream\n" % (len(data), extra) + data + b"\nendstream"


_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


@functools.lru_cache(maxsize=8)
def text_bomb(inflated_mb: int = 200) -> bytes:
    """One page whose content stream inflates to ``inflated_mb`` MB of ``(AAAA...) Tj``: 200 MB is ~500 KB."""
    stream = _deflate(b"BT /F1 12 Tf 72 720 Td\n", TEXT_OPERATOR, inflated_mb << 20, b"ET\n")
    return _pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> "
        b"/Contents 4 0 R >>",
        _stream(stream),
        _FONT,
    ])


@functools.lru_cache(maxsize=8)
def drawing_bomb(inflated_mb: int = 100) -> bytes:
    """One page of ``inflated_mb`` MB of path operators (no text at all)."""
    stream = _deflate(b"q\n", DRAW_OPERATOR, inflated_mb << 20, b"Q\n")
    return _pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        _stream(stream),
    ])


def form_bomb(draws: int = 200_000, form_chars: int = 2_000) -> bytes:
    """A page that draws one small form XObject ``draws`` times: a few KB of file, each draw another
    ``form_chars`` characters for PDFium (the "billion laughs" of PDF)."""
    form = _deflate(b"BT /F1 1 Tf\n", b"(" + b"A" * 98 + b") Tj\n", form_chars + 1, b"ET\n")
    page = _deflate(b"", b"/X1 Do\n", draws * 7, b"")
    return _pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /XObject << /X1 5 0 R >> /Font << /F1 6 0 R >> >> /Contents 4 0 R >>",
        _stream(page),
        _stream(form, b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] "
                      b"/Resources << /Font << /F1 6 0 R >> >> "),
        _FONT,
    ])


def plain_pdf(text: str = "A short page of ordinary text about solar panels and their upkeep.") -> bytes:
    """An ordinary one-page PDF of ``text``: what the limits must let through."""
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")
    stream = zlib.compress(b"BT /F1 12 Tf 72 720 Td (" + escaped + b") Tj ET\n")
    return _pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> "
        b"/Contents 4 0 R >>",
        _stream(stream),
        _FONT,
    ])
