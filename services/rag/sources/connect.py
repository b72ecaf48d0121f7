"""The connector of a stored source: its configuration, its credential opened with the tenant's key, the allowed
folder roots and this replica's cache directory (Git)."""

from __future__ import annotations

import fnmatch
import pathlib
from collections.abc import Sequence
from urllib.parse import urlsplit

from services.rag.sources.connectors.base import Connector
from services.rag.sources.connectors.folder import FolderConnector
from services.rag.sources.connectors.git import GitConnector
from services.rag.sources.connectors.imap import ImapConnector
from services.rag.sources.connectors.webdav import WebDavConnector
from services.rag.sources.model import (
    FolderConfig,
    GitConfig,
    ImapConfig,
    SourceKind,
    SourceRecord,
    SourceRefused,
    WebDavConfig,
)
from services.rag.sources.secrets import CredentialBox, SealedCredentialError
from services.rag.sources.settings import SourcesSettings


class Connectors:
    def __init__(self, settings: SourcesSettings, box: CredentialBox, roots: Sequence[pathlib.Path],
                 cache_dir: pathlib.Path) -> None:
        self._settings = settings
        self._box = box
        self.roots = tuple(roots)
        self._cache_dir = cache_dir

    def check_host(self, host: str) -> None:
        """SOURCE_NOT_ALLOWED unless ``host`` matches ``DOCUTHINKER_RAG_SOURCES_ALLOWED_HOSTS``."""
        patterns = self._settings.allowed_hosts
        if not any(fnmatch.fnmatch(host.lower(), pattern.lower()) for pattern in patterns):
            raise SourceRefused(f"host {host!r} is not one sources may reach here (DOCUTHINKER_RAG_SOURCES_ALLOWED_HOSTS:"
                                f" {', '.join(patterns) or 'none'})")

    def check_reach(self, kind: SourceKind, config: object) -> None:
        """The host a network source names must be allowed (folders and file:// are bound by the roots instead)."""
        if isinstance(config, ImapConfig):
            self.check_host(config.host)
        elif isinstance(config, (WebDavConfig, GitConfig)):
            try:
                parts = urlsplit(config.url)
                host = parts.hostname or ""
            except ValueError as exc:
                raise SourceRefused(f"URL {config.url!r} cannot be read: {exc}") from exc
            if isinstance(config, GitConfig) and parts.scheme in ("", "file"):
                return
            self.check_host(host)

    def open(self, source: SourceRecord) -> Connector:
        try:
            password = self._box.open(source.tenant, source.source_id, source.secret)
        except SealedCredentialError as exc:
            raise SourceRefused(f"the stored credential cannot be read ({exc}): set it again",
                                reason="CREDENTIAL_UNREADABLE") from exc
        config = source.typed_config()
        self.check_reach(source.kind, config)
        timeout, limit = self._settings.network_timeout_s, self._settings.max_items
        if source.kind is SourceKind.FOLDER:
            assert isinstance(config, FolderConfig)
            return FolderConnector(config, self.roots, limit)
        if source.kind is SourceKind.IMAP:
            assert isinstance(config, ImapConfig)
            return ImapConnector(config, password, timeout)
        if source.kind is SourceKind.WEBDAV:
            assert isinstance(config, WebDavConfig)
            return WebDavConnector(config, password, timeout, limit)
        assert isinstance(config, GitConfig)
        cache = self._cache_dir / "git" / source.tenant / f"{source.source_id}.git"
        return GitConnector(config, password, cache, self.roots, timeout, limit)
