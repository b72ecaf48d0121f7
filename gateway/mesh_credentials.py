"""What Envoy adds to every request it forwards into the mesh: the mesh credential, the role when auth is off, and a
subject where the caller has none.

Service ports admit only callers holding the per-mesh secret (``services/runtime/mesh_auth.py``);
Envoy is one, so its routes carry the secret as a request header (a client's own copy is
overwritten). The rendered config then holds the secret, so ``envoy_config.write`` makes it 0600.

The caller's role (``x-docuthinker-role``) comes from the bearer token when auth is on
(``gateway/auth.py`` drops a client's header and sets it from the claim). With auth off nobody is
authenticated, every caller may already be any tenant, and so every caller is ``admin``, as
before roles existed: the header is overwritten with it, never left to the client.
"""

from __future__ import annotations

from gateway.auth import AuthSettings
from services.runtime import mesh_auth
from services.runtime.config import MeshSettings
from services.runtime.request_context import ADMIN, ROLE_HEADER, SUBJECT_HEADER

# With auth off, a caller that names no user (x-docuthinker-subject) is this one: conversations still have an owner.
AUTH_OFF_SUBJECT = "local"
# With auth on, a token without a `sub` claim: a caller who is nobody in particular (it keeps no conversation). Without
# the header the services would take the call for one from inside the mesh, which may name any user.
NO_SUBJECT = "-"


def _overwrite(key: str, value: str) -> dict:
    return {"header": {"key": key, "value": value}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}


def virtual_host_options(settings: MeshSettings, auth: AuthSettings | None) -> dict:
    """``request_headers_to_add`` of the public virtual host (applied to every route's upstream request)."""
    headers = []
    credential = mesh_auth.read_credential(settings.mesh_credential_file)
    if credential is not None:
        headers.append(_overwrite(mesh_auth.CREDENTIAL_HEADER, credential))
    if auth is None or not auth.enabled:
        headers.append(_overwrite(ROLE_HEADER, ADMIN))
    # The token's subject is set by the JWT filter before routing; these only fill in a missing one.
    subject = NO_SUBJECT if auth is not None and auth.enabled else AUTH_OFF_SUBJECT
    headers.append({"header": {"key": SUBJECT_HEADER, "value": subject}, "append_action": "ADD_IF_ABSENT"})
    return {"request_headers_to_add": headers} if headers else {}
