"""What a connector is: it lists a source's items with their change tokens, and fetches an item as the
documents it stands for (a file is one; a message is one, plus one per attachment). Connectors block (file
system, sockets, subprocesses): the sync calls them in a worker thread. They raise the run errors of
``sources.model`` for what stops a whole sync (unreachable, refused credential, missing place); any other
exception from ``fetch`` fails only that item."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from services.rag.ingest.formats import detect_type
from services.runtime.errors import DomainError


@dataclass(frozen=True)
class Item:
    key: str
    """Stable within the source: a relative path, ``<mailbox>/<uidvalidity>/<uid>``."""
    token: str
    """Changes when the item's content may have changed: mtime and size, ETag, UID, Git blob id."""
    name: str = ""
    size: int = 0


@dataclass(frozen=True)
class Part:
    """A document an item stands for: ``suffix`` tells the parts of one item apart ("" for the item itself)."""

    suffix: str
    filename: str
    content_type: str
    data: bytes


@dataclass(frozen=True)
class Listing:
    items: Sequence[Item]
    cursor: dict[str, Any] = field(default_factory=dict)
    """Where the source stands after this listing (a commit id, UIDVALIDITY per mailbox), recorded on success."""


class Connector(Protocol):
    def scan(self, cursor: dict[str, Any]) -> Listing: ...

    def fetch(self, item: Item) -> list[Part]: ...

    def close(self) -> None: ...


def ingestible(filename: str) -> bool:
    """Whether the upload path takes a file of this name (others are skipped, not failed)."""
    if posixpath.basename(filename).startswith((".", "~$")):
        return False
    try:
        detect_type(filename, "")
    except DomainError:
        return False
    return True
