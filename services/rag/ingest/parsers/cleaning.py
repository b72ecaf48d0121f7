"""Text normalisation shared by the parsers: decoding, mojibake repair and control-character removal."""

from __future__ import annotations

import re

import ftfy
from charset_normalizer import from_bytes

from services.runtime.errors import FieldViolation, InvalidArgument

# Keep tab and newline; drop other C0/C1 controls, NUL and the private "hyphen" marks PDFium emits.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff]")
_SPACES = re.compile(r"[ \t\u00a0]+\n")
# UTF-8 read as Windows-1252/Latin-1 ("CafÃ©", "donâ€™t"): a lead byte's character followed by a
# continuation byte's. ftfy only runs on text that has such a pair, and only its encoding fixes.
_MOJIBAKE_HINT = re.compile(
    r"[\x80-\x9f]"
    r"|[\u00c2-\u00f4]"
    r"[\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc\u2013-\u203a\u20ac\u2122]"
)
_FTFY = ftfy.TextFixerConfig(
    unescape_html=False, remove_terminal_escapes=False, fix_latin_ligatures=False, fix_character_width=False,
    uncurl_quotes=False, fix_line_breaks=False, remove_control_chars=False, normalization=None, explain=False,
)
_WESTERN = ("cp1252", "latin_1", "iso8859_15")
_WESTERN_SLACK = 0.15


def repair_mojibake(text: str) -> str:
    """Double-encoded UTF-8 decoded back ("FranÃ§ais" -> "Français"); other text is returned as is."""
    if not _MOJIBAKE_HINT.search(text):
        return text
    # Line by line, so a long document pays for ftfy only on its damaged lines.
    return "".join(
        ftfy.fix_text(line, _FTFY) if _MOJIBAKE_HINT.search(line) else line for line in text.splitlines(keepends=True)
    )


def clean_text(text: str) -> str:
    text = repair_mojibake(text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROLS.sub("", text)
    return _SPACES.sub("\n", text)


def decode_text(data: bytes) -> str:
    """Decodes bytes of unknown encoding: UTF-8 (with or without BOM) first, else detection."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if b"\x00" in data[:4096] and not (data.startswith(b"\xff\xfe") or data.startswith(b"\xfe\xff")):
        raise InvalidArgument(
            "the file looks binary, not text",
            reason="CORRUPT_FILE",
            violations=[FieldViolation("file", "contains NUL bytes; not a text document")],
        )
    matches = list(from_bytes(data))
    best = matches[0] if matches else None
    # Detection is unreliable on short texts (French comes out as Baltic cp1257); Windows-1252 is
    # by far the most common legacy encoding, so it wins when it reads about as cleanly as the best.
    western = next((m for m in matches if m.encoding in _WESTERN), None)
    if best is not None and western is not None and western.chaos <= best.chaos + _WESTERN_SLACK:
        best = western
    if best is None:
        raise InvalidArgument(
            "the text encoding could not be detected",
            reason="CORRUPT_FILE",
            violations=[FieldViolation("file", "undetectable text encoding")],
        )
    return str(best)


def collapse_cell(value: object) -> str:
    """One table cell on one line: newlines and runs of spaces become single spaces."""
    if value is None:
        return ""
    return " ".join(_CONTROLS.sub("", repair_mojibake(str(value))).split())
