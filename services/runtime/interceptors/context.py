"""The request context: bound for the duration of each incoming RPC, carried on by every outgoing one.

Server side, the tenant (``x-tenant-id``; the default tenant when absent), request id, role, subject and
the call's deadline become the ``RequestContext`` of ``services.runtime.request_context``. Client side,
an outgoing call carries them on, with the caller's remaining deadline as its timeout.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable
from typing import Any

import grpc

from services.runtime import request_context
from services.runtime.errors import FieldViolation, InvalidArgument
from services.runtime.interceptors.client import OutgoingCall
from services.runtime.interceptors.server import Inbound, Messages, ServerCall


class RequestScope(Inbound):
    def __init__(self, inner: Inbound, default_tenant: str) -> None:
        super().__init__(inner)
        self._default_tenant = default_tenant

    async def unary(self, call: ServerCall, request: Any) -> Any:
        token = request_context.bind(self._open(call))
        try:
            return await self.inner.unary(call, request)
        finally:
            request_context.unbind(token)

    async def stream(self, call: ServerCall, request: Any) -> Messages:
        token = request_context.bind(self._open(call))
        try:
            async with contextlib.aclosing(self.inner.stream(call, request)) as messages:
                async for message in messages:
                    yield message
        finally:
            request_context.unbind(token)

    def _open(self, call: ServerCall) -> request_context.RequestContext:
        headers = call.headers
        # Absent: the default tenant. Present but empty, repeated or malformed: refused, never the default.
        tenant = headers.get(request_context.TENANT_HEADER, self._default_tenant)
        if not request_context.TENANT_PATTERN.match(tenant):
            raise InvalidArgument(
                "invalid tenant id in x-tenant-id metadata (empty, repeated or malformed)",
                reason="INVALID_TENANT",
                violations=[FieldViolation("x-tenant-id", "one value of 1-64 letters, digits, '.', '_' or '-'")],
            )
        remaining = call.context.time_remaining()
        call.request_context = request_context.RequestContext(
            request_id=headers.get(request_context.REQUEST_ID_HEADER) or uuid.uuid4().hex,
            tenant=tenant,
            deadline=None if remaining is None else time.monotonic() + remaining,
            # A repeated or unknown role reads as a user: only one exact "admin" grants more.
            role=request_context.ADMIN if headers.get(request_context.ROLE_HEADER) == request_context.ADMIN
            else request_context.USER,
            subject=headers.get(request_context.SUBJECT_HEADER, ""),
        )
        return call.request_context


class ContextPropagation:
    """Adds the current request's id, tenant, role and subject to an outgoing call (unless the caller set
    them), and its remaining deadline; a call outside any request gets ``default_timeout``."""

    def __init__(self, default_timeout: float) -> None:
        self._default_timeout = default_timeout

    def begin(self, call: OutgoingCall) -> Callable[[grpc.StatusCode], None] | None:
        ctx = request_context.current()
        metadata = call.metadata
        if ctx is not None:
            for key, value in ((request_context.TENANT_HEADER, ctx.tenant),
                               (request_context.REQUEST_ID_HEADER, ctx.request_id),
                               (request_context.ROLE_HEADER, ctx.role),
                               (request_context.SUBJECT_HEADER, ctx.subject)):
                if value and key not in metadata:
                    metadata.add(key, value)
            remaining = ctx.time_remaining()
            if remaining is not None:
                call.timeout = remaining if call.timeout is None else min(call.timeout, remaining)
        if call.timeout is None:
            call.timeout = self._default_timeout
        return None
