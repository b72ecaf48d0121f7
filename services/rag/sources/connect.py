"""The connector of a stored source: its configuration, its credential opened with the tenant's key, the allowed
folder roots and this replica's cache directory (Git)."""

from __future__ import annotations

import pathlib
from collections.abc import Sequence

from services.rag.sources.connectors.base import Connector
from services.rag.sources.connectors.folder import FolderConnector
from services.rag.sources.connectors.git import GitConnector
from services.rag.sources.connectors.imap import ImapConnector
from services.rag.sources.connectors.webdav import WebDavConnector
from services.rag.sources.model import FolderConfig, GitConfig, ImapConfig, SourceKind, SourceRecord, SourceRefused, \
    WebDavConfig
from services.rag.sources.secrets import CredentialBox, SealedCredentialError
from services.rag.sources.settings import SourcesSettings


class Connectors:
    def __init__(self, settings: SourcesSettings, box: CredentialBox, roots: Sequence[pathlib.Path],
                 cache_dir: pathlib.Path) -> None:
        self._settings = settings
        self._box = box
        self.roots = tuple(roots)
        self._cache_dir = cache_dir

    def open(self, source: SourceRecord) -> Connector:
        try:
            password = self._box.open(source.tenant, source.source_id, source.secret)
        except SealedCredentialError as exc:
            raise SourceRefused(f"the stored credential cannot be read ({exc}): set it again",
                                reason="CREDENTIAL_UNREADABLE") from exc
        config = source.typed_config()
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
