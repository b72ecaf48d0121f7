"""The launcher's local issuer: keys, credential and token made on first start, kept after; auth off explicitly."""

from __future__ import annotations

import json

import httpx
import jwt
from jwt.algorithms import RSAAlgorithm

from gateway.auth import AuthSettings
from services.launcher.local_auth import LocalAuth, TokenAuth


def _claims(token: str, jwks_path) -> dict:
    kid = jwt.get_unverified_header(token)["kid"]
    [jwk] = [k for k in json.loads(jwks_path.read_text())["keys"] if k["kid"] == kid]
    return jwt.decode(token, RSAAlgorithm.from_jwk(jwk), algorithms=["RS256"], audience="docuthinker",
                      issuer="docuthinker")


def test_first_start_makes_private_keys_and_an_admin_token_later_starts_keep_them(tmp_path):
    local = LocalAuth(tmp_path / "data", AuthSettings())
    token = local.prepare()
    auth_dir = tmp_path / "data" / "auth"
    for name in ("signing-key.pem", "mesh-credential", "token"):
        assert (auth_dir / name).stat().st_mode & 0o777 == 0o600, name
    assert local.settings.jwks_file == auth_dir.resolve() / "jwks.json"
    claims = _claims(token, local.settings.jwks_file)
    assert (claims["tenant"], claims["role"]) == ("default", "admin")
    assert (auth_dir / "token").read_text().strip() == token
    key, credential = (auth_dir / "signing-key.pem").read_bytes(), (auth_dir / "mesh-credential").read_text()
    again = LocalAuth(tmp_path / "data", AuthSettings())
    again.prepare()
    assert (auth_dir / "signing-key.pem").read_bytes() == key and (auth_dir / "mesh-credential").read_text() == credential
    assert _claims(token, again.settings.jwks_file)["tenant"] == "default", "tokens outlive restarts"
    assert _claims(again.token("acme"), again.settings.jwks_file)["role"] == "user"


def test_auth_off_is_explicit_and_mints_nothing(tmp_path, caplog):
    LocalAuth(tmp_path / "data", AuthSettings()).prepare()
    off = LocalAuth(tmp_path / "data", AuthSettings(enabled=False))
    assert off.prepare() is None and off.token("acme") is None
    assert not (tmp_path / "data" / "auth" / "token").exists(), "no stale token left for the CLI"
    assert "authentication is OFF" in caplog.text
    assert (tmp_path / "data" / "auth" / "mesh-credential").exists(), "service ports stay closed"


def test_token_auth_signs_each_request_as_the_tenant_it_names(tmp_path):
    local = LocalAuth(tmp_path / "data", AuthSettings())
    local.prepare()
    seen: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda request: seen.append(request) or httpx.Response(200))
    with httpx.Client(transport=transport, auth=TokenAuth(local), base_url="http://gateway") as http:
        http.get("/v1/documents", headers={"x-tenant-id": "acme"})
        http.get("/v1/documents")
        http.get("/v1/documents", headers={"authorization": "Bearer mine"})
        http.get("/v1/documents", headers={"x-tenant-id": "../etc"})
    tenants = [_claims(r.headers["authorization"].removeprefix("Bearer "), local.settings.jwks_file)["tenant"]
               for r in seen[:2]]
    assert tenants == ["acme", "default"]
    assert seen[2].headers["authorization"] == "Bearer mine"
    assert "authorization" not in seen[3].headers, "not a tenant id: left for the gateway to refuse"
