"""Per-request values carried through async code with contextvars.

Set by the server interceptor for each RPC; read by domain code (tenant scoping) and by
the client interceptor (propagation of request id, tenant and remaining deadline).
"""

from __future__ import annotations

import contextvars
import re
import time
from dataclasses import dataclass

from services.runtime.config import DEFAULT_TENANT

TENANT_HEADER = "x-tenant-id"
REQUEST_ID_HEADER = "x-request-id"
# Set by the gateway from the bearer token's role claim (a client's own is dropped there); trusted
# only because service ports admit only the mesh (``mesh_auth``). Anything but "admin" is a user.
ROLE_HEADER = "x-docuthinker-role"
# Set by the gateway from the bearer token's ``sub`` claim (a client's own is dropped there): who the caller is
# within its tenant. Conversations are keyed by it. Trusted for the same reason as the role.
SUBJECT_HEADER = "x-docuthinker-subject"
ADMIN = "admin"
USER = "user"
TENANT_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class RequestContext:
    request_id: str
    tenant: str
    # time.monotonic() at which the caller's deadline expires; None when it set none.
    deadline: float | None = None
    role: str = USER
    """``admin`` sees mesh-wide costs and every tenant's dead letters; a ``user`` only its tenant's."""
    subject: str = ""
    """The token's ``sub`` claim ("" when the token has none, or no gateway set it)."""

    @property
    def is_admin(self) -> bool:
        return self.role == ADMIN

    def time_remaining(self) -> float | None:
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())


_current: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar("docuthinker_request", default=None)


def current() -> RequestContext | None:
    return _current.get()


def current_tenant(default: str = DEFAULT_TENANT) -> str:
    """The request's tenant (the interceptor binds ``MeshSettings.default_tenant`` when the caller
    names none); ``default`` outside a request (background work binds a context of its own)."""
    ctx = _current.get()
    return ctx.tenant if ctx else default


def caller_is_admin() -> bool:
    """The current RPC's caller holds the admin role (outside an RPC: no)."""
    ctx = _current.get()
    return ctx is not None and ctx.is_admin


def current_subject() -> str:
    """The current RPC's caller within its tenant (the token's subject); "" outside an RPC or without one."""
    ctx = _current.get()
    return ctx.subject if ctx else ""


def visible_tenant(default: str = DEFAULT_TENANT) -> str | None:
    """Whose mesh-wide records (costs, dead letters) the caller may read: every tenant's for an admin (None), else
    only its own tenant's. The role comes from the gateway (the token's claim), never from the client."""
    return None if caller_is_admin() else current_tenant(default)


def bind(ctx: RequestContext) -> contextvars.Token[RequestContext | None]:
    return _current.set(ctx)


def unbind(token: contextvars.Token[RequestContext | None]) -> None:
    _current.reset(token)
