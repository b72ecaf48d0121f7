"""Proof that a caller of a service port is part of the mesh: one per-mesh secret, checked on every RPC.

Services trust ``x-tenant-id`` (and the caller's role) from their callers, so a service port must
refuse anyone who is not the gateway or a peer. The launcher creates a random secret on first
start (``<data_dir>/auth/mesh-credential``, mode 0600) and names it to every child with
``DOCUTHINKER_MESH_CREDENTIAL_FILE``; Envoy sends it as a request header on every route it
forwards (``gateway/envoy_config.py``), and the mesh's client channels send it as metadata
(``AddCredential``). The server's first concern (``CredentialCheck``) refuses a call without it with UNAUTHENTICATED,
before any handler, tenant or metrics code runs.

Open without it: the gRPC health service (Envoy's and the launcher's probes; it says only
SERVING or not) and server reflection (the schema is the public contract in proto/). grpcurl
callers of a real RPC pass ``-H "x-docuthinker-mesh-credential: $(cat data/auth/mesh-credential)"``.
"""

from __future__ import annotations

import functools
import hmac
import logging
import os
import pathlib
import secrets
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, NoReturn

import grpc

from services.runtime.config import MeshSettings
from services.runtime.errors import Unauthenticated
from services.runtime.interceptors.client import ClientConcern, OutgoingCall
from services.runtime.interceptors.error_mapping import abort
from services.runtime.interceptors.server import Concern, Inbound, Messages, ServerCall

CREDENTIAL_HEADER = "x-docuthinker-mesh-credential"
CREDENTIAL_FILE = "mesh-credential"
OPEN_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")

log = logging.getLogger("docuthinker.mesh_auth")


def ensure_credential(path: pathlib.Path) -> pathlib.Path:
    """Creates the mesh's secret at ``path`` (0600) unless it exists; a restart keeps the same one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path
    with os.fdopen(descriptor, "w") as out:
        out.write(secrets.token_urlsafe(32))
    return path


@lru_cache(maxsize=4)
def read_credential(path: pathlib.Path | None) -> str | None:
    """The secret in ``path`` (read once per process); None when no credential is configured."""
    if path is None:
        return None
    value = pathlib.Path(path).read_text().strip()
    if not value:
        raise ValueError(f"mesh credential file {path} is empty")
    return value


def beside_local_mesh(settings: MeshSettings) -> MeshSettings:
    """``settings`` with the local mesh's credential (``<data_dir>/auth``) when none is set and ``make run`` made one:
    for a client process started by hand next to it (the MCP server), never for a service."""
    if settings.mesh_credential_file is not None:
        return settings
    local = settings.data_dir / "auth" / CREDENTIAL_FILE
    return settings.model_copy(update={"mesh_credential_file": local}) if local.exists() else settings


class CredentialCheck(Inbound):
    """Refuses every RPC (health and reflection skip the chain) unless it carries the mesh's credential."""

    def __init__(self, inner: Inbound, credential: str) -> None:
        super().__init__(inner)
        self._expected = credential.encode()

    async def unary(self, call: ServerCall, request: Any) -> Any:
        if not self._proven(call):
            await _refuse(call.context)
        return await self.inner.unary(call, request)

    def stream(self, call: ServerCall, request: Any) -> Messages:
        return self.inner.stream(call, request) if self._proven(call) else _refused(call.context)

    def _proven(self, call: ServerCall) -> bool:
        return proven([v for k, v in call.metadata if k.lower() == CREDENTIAL_HEADER], self._expected)


def proven(sent: Sequence[str | bytes], expected: bytes) -> bool:
    """Exactly one credential, equal to the mesh's (compared in constant time). Also the check of the
    plain-HTTP apps behind Envoy (``services/openai_api``), so every port holds to one rule."""
    return len(sent) == 1 and isinstance(sent[0], str) and hmac.compare_digest(sent[0].encode(), expected)


async def _refuse(context: grpc.aio.ServicerContext) -> NoReturn:
    await abort(context, Unauthenticated(
        "this port serves only the DocuThinker mesh: call through the gateway, or send the mesh credential",
        reason="MESH_CREDENTIAL_REQUIRED",
    ))


async def _refused(context: grpc.aio.ServicerContext) -> Messages:
    await _refuse(context)
    yield  # unreachable: makes this the (empty) stream the refusal ends


def server_concerns(credential_file: pathlib.Path | None) -> list[Concern]:
    """The credential check, first in a server's chain; none when the mesh has no credential."""
    credential = read_credential(credential_file)
    return [] if credential is None else [functools.partial(CredentialCheck, credential=credential)]


class AddCredential:
    """Sends the mesh's credential on every call of a channel."""

    def __init__(self, credential: str) -> None:
        self._credential = credential

    def begin(self, call: OutgoingCall) -> None:
        call.metadata[CREDENTIAL_HEADER] = self._credential


def client_concerns(credential_file: pathlib.Path | None) -> list[ClientConcern]:
    """What sends the mesh's credential on a channel's calls; nothing without one."""
    credential = read_credential(credential_file)
    return [] if credential is None else [AddCredential(credential)]


def metadata(credential_file: pathlib.Path | None) -> tuple[tuple[str, str], ...]:
    """The credential as call metadata, for a caller outside the mesh's channels (tests, benchmarks, grpcurl)."""
    credential = read_credential(credential_file)
    return () if credential is None else ((CREDENTIAL_HEADER, credential),)


def warn_if_open(service: str, credential_file: pathlib.Path | None) -> None:
    if credential_file is None:
        log.warning("no mesh credential (DOCUTHINKER_MESH_CREDENTIAL_FILE unset): %s's port accepts any caller,"
                    " which may claim any tenant; run it through the launcher or set one", service)
