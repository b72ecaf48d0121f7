"""E-mail (.eml, RFC 5322/MIME) with the standard library: the headers as ``key: value`` lines,
the body (plain text preferred to HTML), then every attachment parsed by its own format's
parser, its sections under the heading ``Attachment: name``.

Attachments nest (a forwarded message is an attachment) to a bounded depth; an attachment of a
type DocuThinker does not read, or one that is broken, is named in the text and skipped, so one
bad attachment does not fail the message.
"""

from __future__ import annotations

import email
import email.policy
from collections.abc import Callable
from email.message import EmailMessage, Message

from services.rag.documents import ParsedDocument, Section
from services.rag.ingest.formats import FileType, corrupt, detect_type, sanitize_filename
from services.rag.ingest.parsers.cleaning import clean_text, decode_text
from services.rag.ingest.parsers.html import parse_html
from services.rag.ingest.parsers.limits import ParseLimits, too_large
from services.runtime.errors import DomainError

MAX_ATTACHMENTS = 50
MAX_DEPTH = 3
_HEADERS = ("From", "To", "Cc", "Date", "Subject")

ParseAttachment = Callable[[bytes, FileType, ParseLimits], ParsedDocument]


def parse_eml(data: bytes, limits: ParseLimits, parse_attachment: ParseAttachment, depth: int = 0) -> ParsedDocument:
    message = email.message_from_bytes(data, policy=email.policy.default)
    if not isinstance(message, EmailMessage) or not any(message.get(h) for h in (*_HEADERS, "Message-ID")):
        raise corrupt(FileType.EML, "it has none of the From, To, Subject or Date headers of an e-mail")
    sections: list[Section] = []
    head = "\n".join(f"{name}: {' '.join(str(message.get(name)).split())}" for name in _HEADERS if message.get(name))
    subject = " ".join(str(message.get("Subject") or "").split())
    body = _body(message, limits)
    if head or body:
        text = "\n\n".join(p for p in (head, body) if p)
        sections.append(Section(text=text, heading_path=(subject,) if subject else ()))
    skipped: list[str] = []
    for count, part in enumerate(message.iter_attachments(), start=1):
        if count > MAX_ATTACHMENTS:
            skipped.append(f"{count - 1}+ more attachments (limit {MAX_ATTACHMENTS})")
            break
        name = sanitize_filename(part.get_filename() or "") or f"attachment-{count}"
        try:
            parsed = _attachment(part, name, limits, parse_attachment, depth)
        except DomainError as exc:
            skipped.append(f"{name} ({exc.message})")
            continue
        for section in parsed.sections:
            sections.append(Section(text=section.text, page=section.page, sheet_name=section.sheet_name,
                                    heading_path=(f"Attachment: {name}", *section.heading_path),
                                    row_starts=section.row_starts))
    if skipped:
        sections.append(Section(text="Attachments not read: " + "; ".join(skipped), heading_path=("Attachments",)))
    if sum(len(s.text) for s in sections) > limits.max_text_chars:
        raise too_large("extracted characters", limits.max_text_chars, "TOO_MUCH_TEXT")
    return ParsedDocument(tuple(sections), title=subject)


def _body(message: EmailMessage, limits: ParseLimits) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        payload = b""
    if part.get_content_subtype() == "html":
        return "\n\n".join(s.text for s in parse_html(payload, limits).sections)
    charset = part.get_content_charset()
    try:
        text = payload.decode(charset) if charset else decode_text(payload)
    except (LookupError, UnicodeDecodeError):
        text = decode_text(payload)
    return clean_text(text).strip()


def _attachment(part: EmailMessage, name: str, limits: ParseLimits, parse_attachment: ParseAttachment,
                depth: int) -> ParsedDocument:
    if part.get_content_type() == "message/rfc822" or name.lower().endswith(".eml"):
        if depth + 1 >= MAX_DEPTH:
            raise too_large("levels of attached messages", MAX_DEPTH, "TOO_DEEP")
        inner = part.get_payload(0) if part.is_multipart() else None
        data = inner.as_bytes() if isinstance(inner, Message) else _decoded(part)
        return parse_eml(data, limits, parse_attachment, depth + 1)
    data = _decoded(part)
    file_type = detect_type(name, part.get_content_type())
    return parse_attachment(data, file_type, limits)


def _decoded(part: EmailMessage) -> bytes:
    payload = part.get_payload(decode=True)
    return payload if isinstance(payload, bytes) else b""
