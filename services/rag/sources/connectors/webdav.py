"""A WebDAV share (webdav4 over httpx): every ingestible file under the collection, walked one PROPFIND
(Depth: 1) per folder, since many servers refuse Depth: infinity. The change token is the file's ETag, else its
modification time and size."""

from __future__ import annotations

import io
import posixpath
from collections import deque
from typing import Any

import httpx
from webdav4.client import Client, ClientError, HTTPError

from services.rag.sources.connectors.base import Item, Listing, Part, ingestible
from services.rag.sources.model import SourceAuthFailed, SourceMissing, SourceRefused, SourceUnreachable, WebDavConfig


class WebDavConnector:
    def __init__(self, config: WebDavConfig, password: str, timeout_s: float, max_items: int) -> None:
        self._config = config
        self._max_items = max_items
        auth = (config.username, password) if config.username else None
        base = config.url if config.url.endswith("/") else config.url + "/"
        # No retries inside the client: a failed sync is retried by the scheduler with its own backoff.
        self._client = Client(base, auth=auth, retry=False, timeout=timeout_s)

    def _call(self, what: str, call, *args):
        try:
            return call(*args)
        except HTTPError as exc:
            if exc.status_code in (401, 403):
                raise SourceAuthFailed(f"WebDAV server {self._config.url} refused {what}: {exc}") from exc
            if exc.status_code == 404:
                raise SourceMissing(f"WebDAV server {self._config.url} has no {what!r}: {exc}") from exc
            if exc.status_code >= 500:
                raise SourceUnreachable(f"WebDAV server {self._config.url} failed on {what}: {exc}") from exc
            raise
        except (httpx.TransportError, ConnectionError, TimeoutError) as exc:
            raise SourceUnreachable(f"WebDAV server {self._config.url} unreachable ({what}): {exc}") from exc

    def scan(self, cursor: dict[str, Any]) -> Listing:
        items: list[Item] = []
        pending: deque[str] = deque([""])
        while pending:
            folder = pending.popleft()
            entries = self._call(f"listing of {folder or '/'}", self._client.ls, folder, True)
            for entry in sorted(entries, key=lambda e: e["name"]):
                path = entry["name"].strip("/")
                if not path or path == folder.strip("/"):
                    continue
                name = posixpath.basename(path)
                if entry.get("type") == "directory":
                    if not name.startswith("."):
                        pending.append(path + "/")
                    continue
                if not ingestible(name) or not self._config.selects(path):
                    continue
                size = int(entry.get("content_length") or 0)
                token = entry.get("etag") or f"{entry.get('modified')}:{size}"
                items.append(Item(path, str(token), name, size))
                if len(items) > self._max_items:
                    raise SourceRefused(f"the share holds more than {self._max_items} files", reason="SOURCE_TOO_LARGE")
        return Listing(items)

    def fetch(self, item: Item) -> list[Part]:
        buffer = io.BytesIO()
        self._call(f"download of {item.key}", self._client.download_fileobj, item.key, buffer)
        return [Part("", item.name, "", buffer.getvalue())]

    def close(self) -> None:
        try:
            self._client.http.close()
        except (AttributeError, ClientError):
            pass
