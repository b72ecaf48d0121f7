"""What Envoy adds to every request it forwards into the mesh: the mesh credential, the role when auth is off, and a
subject where the caller has none.

Service ports admit only callers holding the per-mesh secret (``services/runtime/mesh_auth.py``);
Envoy is one. The secret never enters Envoy's configuration: the bootstrap names the credential
*file* as a static generic secret (``secret``, read by Envoy at start; its admin ``/config_dump``
shows ``[redacted]`` even for the file name), and every mesh cluster runs Envoy's credential
injector as an upstream HTTP filter (``upstream_filters``), which sets the header from that secret
on each request it sends there, a client's own copy overwritten. Being on the cluster, it covers
what the routes send and what Envoy sends by itself (the strict-JSON check's ``httpCall`` to the
validator, ``gateway/request_validation.py``) alike.

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

SECRET_NAME = "mesh-credential"


def _overwrite(key: str, value: str) -> dict:
    return {"header": {"key": key, "value": value}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}


def virtual_host_options(auth: AuthSettings | None) -> dict:
    """``request_headers_to_add`` of the public virtual host (applied to every route's upstream request)."""
    headers = []
    if auth is None or not auth.enabled:
        headers.append(_overwrite(ROLE_HEADER, ADMIN))
    # The token's subject is set by the JWT filter before routing; these only fill in a missing one.
    subject = NO_SUBJECT if auth is not None and auth.enabled else AUTH_OFF_SUBJECT
    headers.append({"header": {"key": SUBJECT_HEADER, "value": subject}, "append_action": "ADD_IF_ABSENT"})
    return {"request_headers_to_add": headers}


def secrets(settings: MeshSettings) -> list[dict]:
    """The bootstrap's static secrets: the credential by file name (none when the mesh has no credential)."""
    if settings.mesh_credential_file is None:
        return []
    path = settings.mesh_credential_file.resolve()
    return [{"name": SECRET_NAME, "generic_secret": {"secret": {"filename": str(path)}}}]


def upstream_filters(settings: MeshSettings) -> list[dict]:
    """A mesh cluster's upstream HTTP filters: the credential injector, then the codec (which must be last);
    none when the mesh has no credential."""
    if settings.mesh_credential_file is None:
        return []
    return [
        {
            "name": "envoy.filters.http.credential_injector",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.credential_injector.v3.CredentialInjector",
                "overwrite": True,
                "credential": {
                    "name": "envoy.http.injected_credentials.generic",
                    "typed_config": {
                        "@type": "type.googleapis.com/envoy.extensions.http.injected_credentials.generic.v3.Generic",
                        "credential": {"name": SECRET_NAME},
                        "header": mesh_auth.CREDENTIAL_HEADER,
                    },
                },
            },
        },
        {
            "name": "envoy.filters.http.upstream_codec",
            "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.upstream_codec.v3.UpstreamCodec"},
        },
    ]
