"""A folder on this machine: every ingestible file under it (dot files and folders skipped), its change token
the file's modification time and size. The folder must be under one of the allowed roots
(``DOCUTHINKER_RAG_SOURCES_FOLDER_ROOTS``), and a file whose real path leaves the folder (a symbolic link out)
is skipped: a tenant cannot read what the operator did not hand over."""

from __future__ import annotations

import mimetypes
import os
import pathlib
from collections.abc import Sequence
from typing import Any

from services.rag.sources.connectors.base import Item, Listing, Part, ingestible
from services.rag.sources.model import FolderConfig, SourceMissing, SourceRefused


def allowed_folder(path: str, roots: Sequence[pathlib.Path]) -> pathlib.Path:
    """The folder's real path, if it is under one of ``roots`` (SOURCE_NOT_ALLOWED otherwise)."""
    raw = pathlib.Path(path)
    if not raw.is_absolute():
        raise SourceRefused(f"folder {path!r} must be an absolute path")
    try:
        real = pathlib.Path(os.path.realpath(raw))
    except (ValueError, OSError) as exc:
        raise SourceRefused(f"folder {path!r} is not a usable path: {exc}") from exc
    for root in roots:
        if real == root.resolve() or root.resolve() in real.parents:
            return real
    shown = ", ".join(str(r) for r in roots) or "(none)"
    raise SourceRefused(f"folder {path!r} is not under an allowed root ({shown}): set "
                        "DOCUTHINKER_RAG_SOURCES_FOLDER_ROOTS to allow it")


class FolderConnector:
    def __init__(self, config: FolderConfig, roots: Sequence[pathlib.Path], max_items: int) -> None:
        self._config = config
        self._roots = roots
        self._max_items = max_items

    def _root(self) -> pathlib.Path:
        root = allowed_folder(self._config.path, self._roots)
        if not root.is_dir():
            raise SourceMissing(f"folder {self._config.path} does not exist (or is not a folder); nothing was "
                                "deleted: its documents stay until it is back")
        return root

    def scan(self, cursor: dict[str, Any]) -> Listing:
        root = self._root()
        items: list[Item] = []
        for directory, folders, files in os.walk(root):
            folders[:] = sorted(f for f in folders if not f.startswith("."))
            for name in sorted(files):
                path = pathlib.Path(directory) / name
                relative = path.relative_to(root).as_posix()
                if not ingestible(name) or not self._config.selects(relative):
                    continue
                try:
                    real = pathlib.Path(os.path.realpath(path))
                    if root not in real.parents:
                        continue  # a link out of the folder
                    stat = real.stat()
                except OSError:
                    continue  # gone between the listing and now
                items.append(Item(relative, f"{stat.st_mtime_ns}:{stat.st_size}", name, stat.st_size))
                if len(items) > self._max_items:
                    raise SourceRefused(f"the folder holds more than {self._max_items} files",
                                        reason="SOURCE_TOO_LARGE")
        return Listing(items)

    def fetch(self, item: Item) -> list[Part]:
        path = self._root() / item.key
        data = path.read_bytes()
        content_type = mimetypes.guess_type(item.name)[0] or ""
        return [Part("", item.name, content_type, data)]

    def close(self) -> None:
        return None
