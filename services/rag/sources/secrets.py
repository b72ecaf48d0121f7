"""Source credentials sealed at rest, with a key of their tenant.

A master key (32 random bytes in ``DOCUTHINKER_RAG_SOURCES_KEY_FILE``, 0600, made on first use) derives one key
per tenant (HKDF-SHA256, the tenant in ``info``); a credential is sealed with AES-256-GCM under its tenant's key,
with the tenant and source id as associated data, so a sealed value copied to another tenant's or source's row
does not open. Stored as ``v1:<base64(nonce || ciphertext)>``.
"""

from __future__ import annotations

import base64
import os
import pathlib

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

PREFIX = "v1:"


class SealedCredentialError(Exception):
    """A stored credential does not open with this key (another key file, or a tampered row)."""


class CredentialBox:
    def __init__(self, master_key: bytes) -> None:
        if len(master_key) != 32:
            raise ValueError("the sources master key must be 32 bytes")
        self._master = master_key

    @classmethod
    def from_file(cls, path: pathlib.Path) -> CredentialBox:
        """The key in ``path``, written (0600, atomically) with 32 random bytes if the file does not exist."""
        try:
            return cls(path.read_bytes())
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(os.urandom(32))
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(tmp, path)  # a replica that raced here keeps the first key written
            except FileExistsError:
                pass
            finally:
                tmp.unlink(missing_ok=True)
            return cls(path.read_bytes())

    def _key(self, tenant: str) -> AESGCM:
        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                       info=b"docuthinker source credential\x1f" + tenant.encode()).derive(self._master)
        return AESGCM(derived)

    def seal(self, tenant: str, source_id: str, credential: str) -> str:
        if not credential:
            return ""
        nonce = os.urandom(12)
        sealed = self._key(tenant).encrypt(nonce, credential.encode(), f"{tenant}\x1f{source_id}".encode())
        return PREFIX + base64.b64encode(nonce + sealed).decode()

    def open(self, tenant: str, source_id: str, sealed: str) -> str:
        if not sealed:
            return ""
        if not sealed.startswith(PREFIX):
            raise SealedCredentialError("unknown credential format")
        raw = base64.b64decode(sealed[len(PREFIX):])
        try:
            return self._key(tenant).decrypt(raw[:12], raw[12:], f"{tenant}\x1f{source_id}".encode()).decode()
        except InvalidTag as exc:
            raise SealedCredentialError("the stored credential does not open with this key") from exc
