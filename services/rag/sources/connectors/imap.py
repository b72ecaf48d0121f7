"""An IMAP mailbox (IMAPClient): each message is a document (its headers and text) and, unless attachments
stay inline, each ingestible attachment another. Items are ``<mailbox>/<UIDVALIDITY>/<UID>``: IMAP never
changes a message under a UID, so a message is fetched once; a new UIDVALIDITY (the server renumbered the
mailbox) makes every message new and the old ones vanish. Mailboxes are opened read-only and bodies read with
``BODY.PEEK[]``: syncing marks nothing as read."""

from __future__ import annotations

import email
import email.policy
import re
import socket
import ssl
from email.message import EmailMessage
from typing import Any

import imapclient
from imapclient.exceptions import IMAPClientError, LoginError

from services.rag.sources.connectors.base import Item, Listing, Part, ingestible
from services.rag.sources.model import ImapConfig, ImapSecurity, SourceAuthFailed, SourceMissing, SourceUnreachable

_UNSAFE = re.compile(r"[^\w .,()&+-]+")
NETWORK_ERRORS = (OSError, socket.timeout, ssl.SSLError, imapclient.IMAPClient.AbortError)


class ImapConnector:
    def __init__(self, config: ImapConfig, password: str, timeout_s: float) -> None:
        self._config = config
        self._password = password
        self._timeout_s = timeout_s
        self._client: imapclient.IMAPClient | None = None
        self._selected = ""

    def _connect(self) -> imapclient.IMAPClient:
        if self._client is not None:
            return self._client
        config = self._config
        where = f"{config.host}:{config.effective_port}"
        try:
            client = imapclient.IMAPClient(config.host, port=config.effective_port,
                                           ssl=config.security is ImapSecurity.TLS, timeout=self._timeout_s)
            if config.security is ImapSecurity.STARTTLS:
                client.starttls(ssl.create_default_context())
        except NETWORK_ERRORS as exc:
            raise SourceUnreachable(f"IMAP server {where} unreachable: {exc}") from exc
        try:
            client.login(config.username, self._password)
        except LoginError as exc:
            _quietly_close(client)
            raise SourceAuthFailed(f"IMAP server {where} refused the login of {config.username!r}: "
                                   f"{_text(exc)}") from exc
        except NETWORK_ERRORS as exc:
            raise SourceUnreachable(f"IMAP server {where} went away during login: {exc}") from exc
        self._client = client
        return client

    def _select(self, mailbox: str) -> dict:
        client = self._connect()
        try:
            info = client.select_folder(mailbox, readonly=True)
        except NETWORK_ERRORS as exc:  # before IMAPClientError: a dropped connection is one of those too
            self._drop()
            raise SourceUnreachable(f"IMAP server went away: {exc}") from exc
        except IMAPClientError as exc:
            raise SourceMissing(f"mailbox {mailbox!r} cannot be opened: {_text(exc)}") from exc
        self._selected = mailbox
        return info

    def scan(self, cursor: dict[str, Any]) -> Listing:
        items: list[Item] = []
        validity: dict[str, int] = {}
        for mailbox in self._config.mailboxes or ["INBOX"]:
            info = self._select(mailbox)
            uidvalidity = int(info.get(b"UIDVALIDITY", 0))
            validity[mailbox] = uidvalidity
            try:
                uids = self._connect().search("ALL")
            except NETWORK_ERRORS as exc:
                self._drop()
                raise SourceUnreachable(f"IMAP server went away while listing {mailbox!r}: {exc}") from exc
            items.extend(Item(f"{mailbox}/{uidvalidity}/{uid}", str(uid), f"message-{uid}.eml") for uid in sorted(uids))
        return Listing(items, {"uidvalidity": validity})

    def fetch(self, item: Item) -> list[Part]:
        mailbox, _, uid = item.key.rsplit("/", 2)
        if self._selected != mailbox:
            self._select(mailbox)
        try:
            found = self._connect().fetch([int(uid)], ["BODY.PEEK[]"])
        except NETWORK_ERRORS as exc:
            self._drop()
            raise SourceUnreachable(f"IMAP server went away while fetching message {uid}: {exc}") from exc
        body = next((data.get(b"BODY[]") for data in found.values()), None)
        if body is None:
            raise LookupError(f"message {uid} is no longer in {mailbox!r}")
        return message_parts(bytes(body), int(uid), self._config.attachments_inline)

    def close(self) -> None:
        if self._client is not None:
            _quietly_close(self._client)
            self._client = None

    def _drop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            _quietly_close(client)


def message_parts(raw: bytes, uid: int, inline: bool) -> list[Part]:
    """The message's document and, unless ``inline``, one per ingestible attachment. The message's own document
    then keeps its headers, its text and the names of its attachments (each is a document of its own)."""
    message = email.message_from_bytes(raw, policy=email.policy.default)
    subject = str(message.get("Subject", "") or "").strip()
    stem = _UNSAFE.sub(" ", subject)[:80].strip() or "message"
    name = f"{stem} ({uid}).eml"
    if inline or not isinstance(message, EmailMessage):
        return [Part("", name, "message/rfc822", raw)]
    attachments: list[Part] = []
    names: list[str] = []
    for index, part in enumerate(message.iter_attachments(), 1):
        filename = part.get_filename() or f"attachment-{index}"
        names.append(filename)
        payload = part.get_payload(decode=True)
        if isinstance(payload, bytes) and payload and ingestible(filename):
            attachments.append(Part(f"attachment/{index}", filename, part.get_content_type(), payload))
    if not attachments:
        return [Part("", name, "message/rfc822", raw)]
    text = EmailMessage()
    for header in ("From", "To", "Cc", "Date", "Subject", "Message-ID"):
        if message.get(header):
            text[header] = str(message[header])
    body = message.get_body(preferencelist=("plain", "html"))
    content = body.get_content() if body is not None else ""
    if body is not None and body.get_content_type() == "text/html":
        text.set_content(content, subtype="html")
        text.add_attachment(_attachment_note(names).encode(), maintype="text", subtype="plain",
                            filename="attachments.txt")
    else:
        text.set_content(f"{content.rstrip()}\n\n{_attachment_note(names)}\n")
    return [Part("", name, "message/rfc822", bytes(text)), *attachments]


def _attachment_note(names: list[str]) -> str:
    return "Attachments (each a document of its own): " + ", ".join(names)


def _text(exc: Exception) -> str:
    message = exc.args[0] if exc.args else exc
    return message.decode(errors="replace") if isinstance(message, bytes) else str(message)


def _quietly_close(client: imapclient.IMAPClient) -> None:
    try:
        client.logout()
    except Exception:  # noqa: BLE001 - already gone: nothing to close
        try:
            client.shutdown()
        except Exception:  # noqa: BLE001
            pass
