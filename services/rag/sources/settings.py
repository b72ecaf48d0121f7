"""Settings of sources, read from ``DOCUTHINKER_RAG_SOURCES_*`` environment variables."""

from __future__ import annotations

import pathlib

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class SourcesSettings(BaseSettings):
    """How the rag replicas keep sources in sync (folders, IMAP mailboxes, WebDAV shares, Git branches)."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_RAG_SOURCES_", frozen=True, extra="ignore")

    enabled: bool = True
    """Run the scheduler in this replica (sources can still be configured with it off; another replica syncs)."""
    default_interval_s: int = Field(default=900, ge=10)
    """Seconds between scheduled syncs of a source that sets no interval."""
    min_interval_s: int = Field(default=10, ge=1)
    """The shortest interval a source may ask for."""
    tick_s: float = Field(default=2.0, gt=0)
    """How often a replica looks for due sources (a sync asked for through this replica starts at once)."""
    max_concurrent: int = Field(default=2, ge=1, le=64)
    """Syncs one replica runs at the same time (each uploads its items one after the other)."""
    lease_s: float = Field(default=60.0, gt=0)
    """How long a replica's claim on a source it is syncing lasts unrenewed (renewed every third of it)."""
    folder_roots: list[pathlib.Path] = Field(default_factory=list)
    """Folders under which folder sources (and file:// Git repositories) may be; empty: ``<data_dir>/sources``.
    A JSON list, e.g. ``["/srv/shared", "/home/reports"]``."""
    allowed_hosts: list[str] = Field(default_factory=lambda: ["*"])
    """Hosts IMAP, WebDAV and Git sources may reach (``fnmatch`` patterns, e.g. ``["*.example.com", "10.0.0.*"]``);
    others are refused when a source is stored and when it syncs. ``["*"]``: any (narrow it where tenants must not
    reach internal services through a source)."""
    key_file: pathlib.Path | None = None
    """The master key that seals source credentials (per tenant); unset: ``<data_dir>/auth/sources.key``, made on
    first use. Every replica must read the same key."""
    item_backoff_initial_s: float = Field(default=30.0, gt=0)
    """Wait before a failed item is tried again; doubled per failure, each wait less up to a fifth at random
    (``services/runtime/backoff.py``)."""
    item_backoff_max_s: float = Field(default=6 * 3600.0, gt=0)
    """The longest wait between two tries of a failing item."""
    run_backoff_initial_s: float = Field(default=30.0, gt=0)
    """Wait before a source whose sync failed (unreachable, refused credential) is tried again; doubled per
    failure, never past its interval, each wait less up to a fifth at random (``services/runtime/backoff.py``)."""
    run_backoff_max_s: float = Field(default=3600.0, gt=0)
    """The longest wait before a failed sync is tried again."""
    network_timeout_s: float = Field(default=30.0, gt=0)
    """Connect and read timeout of IMAP, WebDAV and Git calls."""
    watch_debounce_ms: int = Field(default=800, ge=50)
    """File events of a watched folder within this many milliseconds start one sync."""
    max_items: int = Field(default=100_000, ge=1)
    """Items one source may list; more fails the sync (SOURCE_TOO_LARGE)."""
