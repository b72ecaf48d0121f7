"""Authentication of the local mesh, on by default: a signing key, the mesh credential and tokens.

On first start the launcher makes, in ``<data_dir>/auth`` (each secret 0600): the signing key and
JWKS Envoy verifies bearer tokens against (``gateway/auth.py``), and the mesh credential service
ports require (``services/runtime/mesh_auth.py``). At every start it mints an ``admin`` token for
the default tenant and writes it to ``<data_dir>/auth/token``, which the CLI reads when given no
``--token``; ``make run`` prints it, and a web-app URL carrying it in the fragment (``/#token=...``:
a fragment never leaves the browser, and the app moves it to its local storage and drops it from
the address bar). More tokens: ``python -m services.launcher token --tenant acme [--role admin]``.

The same ``Mesh`` serves the tests and benchmarks: ``TokenAuth`` gives an httpx client a token for
whichever tenant a request names in ``x-tenant-id``, so a test keeps saying which tenant it is.
"""

from __future__ import annotations

import logging
import pathlib
from collections.abc import Generator
from dataclasses import dataclass

import httpx

from gateway.auth import KEY_FILE, TOKEN_FILE, AuthSettings, ensure_keys, local_issuer, mint, write_private
from services.runtime import mesh_auth
from services.runtime.config import DEFAULT_TENANT
from services.runtime.request_context import ADMIN, TENANT_HEADER, TENANT_PATTERN, USER

log = logging.getLogger("docuthinker.launcher")
AUTH_DIR = "auth"


@dataclass
class LocalAuth:
    """The mesh's secrets under ``<data_dir>/auth``."""

    data_dir: pathlib.Path
    settings: AuthSettings
    credential_file: pathlib.Path | None = None
    """Where the mesh credential lives; None: ``<data_dir>/auth/mesh-credential``."""

    def __post_init__(self) -> None:
        self.settings = local_issuer(self.settings, self.data_dir)
        self.credential_file = pathlib.Path(self.credential_file or self.directory / mesh_auth.CREDENTIAL_FILE)

    @property
    def directory(self) -> pathlib.Path:
        return pathlib.Path(self.data_dir) / AUTH_DIR

    @property
    def signing_key(self) -> pathlib.Path | None:
        """The local issuer's key (made by ``prepare``); None when auth is off or another issuer's JWKS is set."""
        if not self.settings.enabled or self.settings.jwks_file is None:
            return None
        key = pathlib.Path(self.settings.jwks_file).parent / KEY_FILE
        return key if key.parent == self.directory.resolve() or key.exists() else None

    @property
    def token_file(self) -> pathlib.Path:
        return self.directory / TOKEN_FILE

    def prepare(self) -> str | None:
        """Creates what is missing; writes and returns this start's admin token (None with auth off)."""
        mesh_auth.ensure_credential(self.credential_file)  # type: ignore[arg-type]
        if not self.settings.enabled:
            log.warning("authentication is OFF (DOCUTHINKER_AUTH_ENABLED=false): anyone who reaches the gateway"
                        " may act as any tenant (x-tenant-id) and as admin")
            self.token_file.unlink(missing_ok=True)
            return None
        key = self.signing_key
        if key is None:
            return None  # another issuer's keys: it mints the tokens
        ensure_keys(key.parent)
        token = mint(key, DEFAULT_TENANT, ttl_s=self.settings.local_token_ttl_hours * 3600, auth=self.settings,
                     subject="make-run", role=ADMIN)
        write_private(self.token_file, token + "\n")
        return token

    def token(self, tenant: str = DEFAULT_TENANT, role: str = USER, ttl_s: float = 3600, subject: str = "") -> str | None:
        """A bearer token signed with the local key; None with auth off."""
        key = self.signing_key
        if key is None:
            return None
        return mint(key, tenant, ttl_s=ttl_s, auth=self.settings, subject=subject, role=role)


class TokenAuth(httpx.Auth):
    """Sends, on each request, a bearer token for the tenant its ``x-tenant-id`` names (the default tenant
    without one) and drops the header the gateway would drop anyway; a request that brings its own
    ``authorization`` is left alone, and so is a header that is no tenant id (for the gateway to refuse)."""

    def __init__(self, auth: LocalAuth, role: str = USER) -> None:
        self._auth = auth
        self._role = role
        self._tokens: dict[str, str | None] = {}

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        tenant = request.headers.get(TENANT_HEADER, DEFAULT_TENANT)
        if "authorization" not in request.headers and TENANT_PATTERN.match(tenant):
            if tenant not in self._tokens:
                self._tokens[tenant] = self._auth.token(tenant, self._role, ttl_s=24 * 3600, subject="tests")
            token = self._tokens[tenant]
            if token is not None:
                request.headers["authorization"] = f"Bearer {token}"
        yield request
