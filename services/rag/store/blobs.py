"""Original bytes of every document, stored by tenant and content hash.

Kept so that a re-index re-parses the exact upload and a crash mid-ingestion can resume.
Writes are atomic (temporary file, fsync, rename), so a blob is either whole or absent.
"""

from __future__ import annotations

import os
import pathlib
import tempfile


class BlobStore:
    def __init__(self, root: pathlib.Path) -> None:
        self._root = root
        root.mkdir(parents=True, exist_ok=True)

    def path(self, tenant: str, content_sha256: str) -> pathlib.Path:
        # Tenant ids are validated ([A-Za-z0-9][A-Za-z0-9_.-]*) and hashes are hex: safe path parts.
        return self._root / tenant / content_sha256[:2] / content_sha256

    def put(self, tenant: str, content_sha256: str, data: bytes) -> None:
        target = self.path(tenant, content_sha256)
        if target.exists() and target.stat().st_size == len(data):
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".incoming-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            pathlib.Path(tmp).unlink(missing_ok=True)
            raise

    def get(self, tenant: str, content_sha256: str) -> bytes | None:
        try:
            return self.path(tenant, content_sha256).read_bytes()
        except FileNotFoundError:
            return None

    def exists(self, tenant: str, content_sha256: str) -> bool:
        return self.path(tenant, content_sha256).is_file()

    def delete(self, tenant: str, content_sha256: str) -> None:
        self.path(tenant, content_sha256).unlink(missing_ok=True)
