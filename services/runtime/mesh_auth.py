"""Proof that a caller of a service port is part of the mesh: one per-mesh secret, checked on every RPC.

Services trust ``x-tenant-id`` (and the caller's role) from their callers, so a service port must
refuse anyone who is not the gateway or a peer. The launcher creates a random secret on first
start (``<data_dir>/auth/mesh-credential``, mode 0600) and names it to every child with
``DOCUTHINKER_MESH_CREDENTIAL_FILE``; Envoy sends it as a request header on every route it
forwards (``gateway/envoy_config.py``), and the mesh's client channels send it as metadata
(``client_interceptors``). The server interceptor refuses a call without it with UNAUTHENTICATED,
before any handler, tenant or metrics code runs.

Open without it: the gRPC health service (Envoy's and the launcher's probes; it says only
SERVING or not) and server reflection (the schema is the public contract in proto/). grpcurl
callers of a real RPC pass ``-H "x-docuthinker-mesh-credential: $(cat data/auth/mesh-credential)"``.
"""

from __future__ import annotations

import hmac
import logging
import os
import pathlib
import secrets
from collections.abc import Callable, Sequence
from functools import lru_cache

import grpc
from grpc_status import rpc_status

from services.runtime.config import MeshSettings
from services.runtime.errors import Unauthenticated, status_from_exception

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


class CredentialCheck(grpc.aio.ServerInterceptor):
    """Refuses every RPC but health and reflection unless it carries the mesh's credential."""

    def __init__(self, credential: str) -> None:
        self._expected = credential.encode()

    async def intercept_service(self, continuation: Callable, details: grpc.HandlerCallDetails):
        handler = await continuation(details)
        if handler is None or details.method.startswith(OPEN_PREFIXES) or self._proven(details):
            return handler
        return _refusal(handler)

    def _proven(self, details: grpc.HandlerCallDetails) -> bool:
        sent = [v for k, v in details.invocation_metadata or () if k.lower() == CREDENTIAL_HEADER]
        return proven(sent, self._expected)


def proven(sent: Sequence[str | bytes], expected: bytes) -> bool:
    """Exactly one credential, equal to the mesh's (compared in constant time). Also the check of the
    plain-HTTP apps behind Envoy (``services/openai_api``), so every port holds to one rule."""
    return len(sent) == 1 and isinstance(sent[0], str) and hmac.compare_digest(sent[0].encode(), expected)


async def _refuse(request, context: grpc.aio.ServicerContext) -> None:
    error = Unauthenticated(
        "this port serves only the DocuThinker mesh: call through the gateway, or send the mesh credential",
        reason="MESH_CREDENTIAL_REQUIRED",
    )
    status = rpc_status.to_status(status_from_exception(error))
    await context.abort(status.code, status.details, trailing_metadata=status.trailing_metadata)


def _refusal(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """A handler of the same kind as ``handler`` (so requests are read as it would) that only refuses."""
    kind = (
        grpc.unary_unary_rpc_method_handler if handler.unary_unary
        else grpc.unary_stream_rpc_method_handler if handler.unary_stream
        else grpc.stream_unary_rpc_method_handler if handler.stream_unary
        else grpc.stream_stream_rpc_method_handler
    )
    return kind(_refuse, handler.request_deserializer, handler.response_serializer)


def server_interceptors(credential_file: pathlib.Path | None) -> list[grpc.aio.ServerInterceptor]:
    credential = read_credential(credential_file)
    return [] if credential is None else [CredentialCheck(credential)]


class _AddCredential:
    def __init__(self, credential: str) -> None:
        self._credential = credential

    def _details(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        metadata = grpc.aio.Metadata(*(details.metadata or ()))
        metadata[CREDENTIAL_HEADER] = self._credential
        return grpc.aio.ClientCallDetails(details.method, details.timeout, metadata, details.credentials,
                                          details.wait_for_ready)


class _UnaryUnary(_AddCredential, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation, details, request):
        return await continuation(self._details(details), request)


class _UnaryStream(_AddCredential, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation, details, request):
        return await continuation(self._details(details), request)


class _StreamUnary(_AddCredential, grpc.aio.StreamUnaryClientInterceptor):
    async def intercept_stream_unary(self, continuation, details, request_iterator):
        return await continuation(self._details(details), request_iterator)


class _StreamStream(_AddCredential, grpc.aio.StreamStreamClientInterceptor):
    async def intercept_stream_stream(self, continuation, details, request_iterator):
        return await continuation(self._details(details), request_iterator)


def client_interceptors(credential_file: pathlib.Path | None) -> list:
    """Interceptors sending the mesh's credential on every call of a channel; none without one."""
    credential = read_credential(credential_file)
    if credential is None:
        return []
    return [_UnaryUnary(credential), _UnaryStream(credential), _StreamUnary(credential), _StreamStream(credential)]


def metadata(credential_file: pathlib.Path | None) -> tuple[tuple[str, str], ...]:
    """The credential as call metadata, for a caller outside the mesh's channels (tests, benchmarks, grpcurl)."""
    credential = read_credential(credential_file)
    return () if credential is None else ((CREDENTIAL_HEADER, credential),)


def warn_if_open(service: str, credential_file: pathlib.Path | None) -> None:
    if credential_file is None:
        log.warning("no mesh credential (DOCUTHINKER_MESH_CREDENTIAL_FILE unset): %s's port accepts any caller,"
                    " which may claim any tenant; run it through the launcher or set one", service)
