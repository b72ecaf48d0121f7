"""Domain types of document versions: one row per version, and what a store hands back about them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np


class VersionState(IntEnum):
    """Where a version stands (values equal the proto's ``DocumentVersion.State``)."""

    LIVE = 1
    """The version searches and answers use by default."""
    SUPERSEDED = 2
    """An older version: readable, citable, and searched only when asked for by number."""
    INGESTING = 3
    """New bytes being ingested beside the live version, which stays searchable meanwhile."""
    FAILED = 4
    """New bytes that could not be ingested; the live version is unchanged."""


@dataclass(frozen=True)
class DocumentVersion:
    document_id: str
    version: int
    state: VersionState
    filename: str
    file_type: str
    content_type: str
    content_sha256: str
    size_bytes: int
    create_time: float
    page_count: int = 0
    title: str = ""
    chunk_count: int = 0
    chunks_embedded: int = 0
    """Chunks whose vectors this version's ingestion computed."""
    chunks_reused: int = 0
    """Chunks whose text an earlier version already had: their vectors were copied, not computed."""
    superseded_time: float | None = None
    error_message: str = ""


@dataclass(frozen=True)
class StoredVector:
    """A chunk's text and vector kept with an earlier version (or the live one), for reuse and version search."""

    chunk_id: str
    text: str
    vector: np.ndarray | None


class TargetBusy(Exception):
    """The document a new version is for is being re-indexed or changed by another ingestion right now: the
    promotion waits and tries again."""


def split_version(document_id: str) -> tuple[str, int | None]:
    """``"<id>@<n>"`` names version n of a document; a bare id names its live version (None)."""
    base, sep, number = document_id.rpartition("@")
    if not sep or not base or not number.isdigit() or int(number) < 1:
        return document_id, None
    return base, int(number)
