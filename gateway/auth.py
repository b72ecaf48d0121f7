"""Authentication at the edge: Envoy verifies a JWT on every call and takes the tenant and role from it.

On by default. ``make run`` (the launcher, ``services/launcher/local_auth.py``) makes a signing key
on first start in ``<data_dir>/auth`` (``signing-key.pem``, 0600, and ``jwks.json``) and prints an
admin token. ``DOCUTHINKER_AUTH_JWKS_FILE`` points Envoy at another issuer's public keys instead
(your identity provider's, saved to a file: RS256, ES256, EdDSA ...). By hand (the commands are the
launcher's, which uses ``keygen`` and ``mint`` below)::

    python -m services.launcher keygen --dir DIR                      # a signing key and DIR/jwks.json
    python -m services.launcher token --tenant acme [--role admin]    # a bearer token for tenant "acme"

``DOCUTHINKER_AUTH_ENABLED=false`` turns it off (a warning is logged): then anyone who reaches
the gateway may be any tenant with one ``x-tenant-id`` header, and is an admin.

With it on, Envoy does this to every request but ``GET /v1/health``, in this order:

1. It drops any ``x-tenant-id``, ``x-docuthinker-role`` and ``x-docuthinker-subject`` header the client sent.
2. It verifies the ``Authorization: Bearer`` token: signature, issuer, audience and expiry.
   Failing that, the answer is HTTP 401 (gRPC UNAUTHENTICATED).
3. It requires the tenant claim (``DOCUTHINKER_AUTH_TENANT_CLAIM``), shaped like a tenant id.
   Failing that, the answer is HTTP 403 (gRPC PERMISSION_DENIED).
4. It sets ``x-tenant-id`` from that claim and ``x-docuthinker-role`` from the role claim
   (``DOCUTHINKER_AUTH_ROLE_CLAIM``; ``admin`` sees mesh-wide costs and every tenant's dead
   letters, anything else, or none, is a ``user`` who sees only its tenant's), and
   ``x-docuthinker-subject`` from the ``sub`` claim (who the caller is within the tenant: conversations
   are that user's alone).

Both errors are ``google.rpc.Status`` JSON, like every other error of the REST surface. The
services behind Envoy trust those two headers only from callers holding the mesh credential
(``services/runtime/mesh_auth.py``): Envoy and the services themselves. Envoy reads the JWKS file
at startup: after a key rotation (``keygen`` again adds a key), restart the gateway.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pathlib
import time

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.runtime.request_context import ADMIN, ROLE_HEADER, SUBJECT_HEADER, TENANT_HEADER, TENANT_PATTERN, USER

KEY_FILE = "signing-key.pem"
JWKS_FILE = "jwks.json"
TOKEN_FILE = "token"
ALGORITHM = "RS256"
ROLES = (ADMIN, USER)
_JWT_FILTER = "envoy.filters.http.jwt_authn"
_PAYLOAD_METADATA = "jwt_payload"
# Envoy's RE2 budget for RBAC regexes is small: the length limit of a tenant id is left to the
# services, which refuse longer ones with INVALID_TENANT.
_TENANT_REGEX = "[A-Za-z0-9][A-Za-z0-9_.-]*"


class AuthSettings(BaseSettings):
    """Bearer-token authentication at the gateway (Envoy's jwt_authn filter)."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_AUTH_", frozen=True, extra="ignore")

    enabled: bool = True
    """Every REST and gRPC call through Envoy but GET /v1/health needs a bearer token, and the tenant and role come
    from the token, not from headers. ``false``: any caller may be any tenant (x-tenant-id) and is an admin; a
    warning is logged."""
    jwks_file: pathlib.Path | None = None
    """JWKS file of the token issuer's public keys; unset: the launcher's own key in ``<data_dir>/auth``, made on
    first start."""
    issuer: str = "docuthinker"
    """Required ``iss`` claim of tokens."""
    audience: str = "docuthinker"
    """Required ``aud`` claim of tokens."""
    tenant_claim: str = "tenant"
    """Claim holding the caller's tenant id."""
    role_claim: str = "role"
    """Claim holding the caller's role: ``admin``, or ``user`` (also when absent)."""
    local_token_ttl_hours: float = Field(default=720.0, gt=0)
    """Lifetime of the admin token the launcher mints and prints at each start."""


def local_issuer(auth: AuthSettings, data_dir: pathlib.Path) -> AuthSettings:
    """``auth`` with the local signing key's JWKS (``<data_dir>/auth``) when on and no other issuer is set."""
    if not auth.enabled or auth.jwks_file is not None:
        return auth
    return auth.model_copy(update={"jwks_file": pathlib.Path(data_dir).resolve() / "auth" / JWKS_FILE})


# -- Envoy configuration ------------------------------------------------------------------
def http_filters(auth: AuthSettings) -> list[dict]:
    """The filters that go before the transcoder: strip the headers, verify the token, require the tenant."""
    if auth.jwks_file is None:
        raise ValueError("auth is on but no JWKS file is set (the launcher makes one; or set DOCUTHINKER_AUTH_JWKS_FILE"
                         " or DOCUTHINKER_AUTH_ENABLED=false)")
    strip = {
        "name": "envoy.filters.http.header_mutation",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.header_mutation.v3.HeaderMutation",
            "mutations": {"request_mutations": [{"remove": TENANT_HEADER}, {"remove": ROLE_HEADER},
                                                 {"remove": SUBJECT_HEADER}]},
        },
    }
    verify = {
        "name": _JWT_FILTER,
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication",
            "providers": {
                "docuthinker": {
                    "issuer": auth.issuer,
                    "audiences": [auth.audience],
                    "local_jwks": {"filename": str(pathlib.Path(auth.jwks_file).resolve())},
                    "payload_in_metadata": _PAYLOAD_METADATA,
                    "claim_to_headers": [{"header_name": TENANT_HEADER, "claim_name": auth.tenant_claim},
                                         {"header_name": ROLE_HEADER, "claim_name": auth.role_claim},
                                         {"header_name": SUBJECT_HEADER, "claim_name": "sub"}],
                }
            },
            "rules": [
                {"match": {"path": "/v1/health"}},
                {"match": {"prefix": "/"}, "requires": {"provider_name": "docuthinker"}},
            ],
        },
    }
    require_tenant = {
        "name": "envoy.filters.http.rbac",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC",
            "rules": {
                "action": "ALLOW",
                "policies": {
                    "health": {
                        "permissions": [{"url_path": {"path": {"exact": "/v1/health"}}}],
                        "principals": [{"any": True}],
                    },
                    "tenant_token": {
                        "permissions": [{"any": True}],
                        "principals": [{"metadata": {
                            "filter": _JWT_FILTER,
                            "path": [{"key": _PAYLOAD_METADATA}, {"key": auth.tenant_claim}],
                            "value": {"string_match": {"safe_regex": {"regex": _TENANT_REGEX}}},
                        }}],
                    },
                },
            },
        },
    }
    return [strip, verify, require_tenant]


def local_reply_mappers() -> list[dict]:
    """Envoy's own 401 and 403 answers as google.rpc.Status JSON (codes 16 and 7)."""
    return [_status_mapper(401, 16), _status_mapper(403, 7)]


def _status_mapper(http_status: int, grpc_code: int) -> dict:
    return {
        "filter": {"status_code_filter": {"comparison": {
            "op": "EQ", "value": {"default_value": http_status, "runtime_key": f"docuthinker.reply_{http_status}"},
        }}},
        "body_format_override": {
            "json_format": {"code": grpc_code, "message": "%LOCAL_REPLY_BODY%", "details": []},
            "content_type": "application/json",
        },
    }


# -- keys and tokens ----------------------------------------------------------------------
def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _thumbprint(jwk: dict) -> str:
    """RFC 7638 key id: the hash of the key's required members, so each key names itself."""
    canonical = json.dumps({k: jwk[k] for k in ("e", "kty", "n")}, separators=(",", ":"), sort_keys=True)
    return _b64(hashlib.sha256(canonical.encode()).digest())


def ensure_keys(directory: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """The signing key and JWKS in ``directory``, made on first use and kept after (tokens outlive restarts)."""
    key_path, jwks_path = directory / KEY_FILE, directory / JWKS_FILE
    if key_path.exists() and jwks_path.exists():
        return key_path, jwks_path
    return keygen(directory)


def write_private(path: pathlib.Path, text: str) -> pathlib.Path:
    """Writes ``text`` readable by this user alone (a token, a config holding a secret)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(text)
    os.chmod(path, 0o600)  # an older file keeps its mode through O_CREAT
    return path


def keygen(directory: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """A new RSA signing key (replacing the old one) whose public half is added to the JWKS file.

    Old public keys stay in the JWKS, so tokens signed before a rotation stay valid until they expire.
    """
    directory.mkdir(parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    public.update({"kid": _thumbprint(public), "alg": ALGORITHM, "use": "sig"})
    jwks_path = directory / JWKS_FILE
    jwks = json.loads(jwks_path.read_text()) if jwks_path.exists() else {"keys": []}
    jwks["keys"].append(public)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    key_path = write_private(directory / KEY_FILE, pem.decode())
    jwks_path.write_text(json.dumps(jwks, indent=2))
    return key_path, jwks_path


def mint(key_path: pathlib.Path, tenant: str, *, ttl_s: float, auth: AuthSettings, subject: str = "",
         role: str = USER, now: float | None = None) -> str:
    """A signed bearer token for ``tenant`` with ``role`` (the key id names the key, so a JWKS may hold several)."""
    if not TENANT_PATTERN.match(tenant):
        raise ValueError(f"invalid tenant id {tenant!r}: 1-64 letters, digits, '.', '_' or '-'")
    if role not in ROLES:
        raise ValueError(f"invalid role {role!r}: one of {', '.join(ROLES)}")
    key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    public = json.loads(RSAAlgorithm.to_jwk(key.public_key()))  # type: ignore[arg-type]
    issued = int(time.time() if now is None else now)
    claims = {"iss": auth.issuer, "aud": auth.audience, "iat": issued, "exp": issued + int(ttl_s),
              auth.tenant_claim: tenant, auth.role_claim: role}
    if subject:
        claims["sub"] = subject
    return jwt.encode(claims, key, algorithm=ALGORITHM, headers={"kid": _thumbprint(public)})  # type: ignore[arg-type]
