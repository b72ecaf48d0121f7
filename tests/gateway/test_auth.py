"""The gateway's bearer-token auth: keys and tokens, and the Envoy config it renders (validated by
the real Envoy binary). What Envoy then does with real requests is tested in tests/e2e/test_auth.py."""

from __future__ import annotations

import json
import stat
import subprocess

import jwt
import pytest

from gateway import envoy_config
from gateway.auth import AuthSettings, keygen, mint
from gateway.edge_policy import EdgeSettings
from services.launcher.__main__ import main as launcher_main
from services.launcher.mesh import envoy_binary
from services.runtime.config import MeshSettings


@pytest.fixture
def keys(tmp_path):
    key, jwks = keygen(tmp_path / "auth")
    return key, jwks, AuthSettings(jwks_file=jwks)


def _verify(token: str, jwks_path, auth: AuthSettings) -> dict:
    kid = jwt.get_unverified_header(token)["kid"]
    [jwk] = [k for k in json.loads(jwks_path.read_text())["keys"] if k["kid"] == kid]
    public = jwt.PyJWK(jwk).key
    return jwt.decode(token, public, algorithms=["RS256"], audience=auth.audience, issuer=auth.issuer)


def test_a_minted_token_verifies_against_the_jwks(keys):
    key, jwks, auth = keys
    claims = _verify(mint(key, "acme", ttl_s=3600, auth=auth, subject="ci"), jwks, auth)
    assert (claims["tenant"], claims["sub"], claims["exp"] - claims["iat"]) == ("acme", "ci", 3600)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600  # the signing key is readable by its owner only


def test_rotation_keeps_old_tokens_valid(keys):
    key, jwks, auth = keys
    old = mint(key, "acme", ttl_s=3600, auth=auth)
    keygen(jwks.parent)
    new = mint(key, "acme", ttl_s=3600, auth=auth)
    assert len(json.loads(jwks.read_text())["keys"]) == 2
    assert jwt.get_unverified_header(old)["kid"] != jwt.get_unverified_header(new)["kid"]
    assert _verify(old, jwks, auth)["tenant"] == _verify(new, jwks, auth)["tenant"] == "acme"


def test_tenants_are_checked_when_minting(keys, capsys):
    key, _, auth = keys
    with pytest.raises(ValueError, match="invalid tenant"):
        mint(key, "acme corp!", ttl_s=60, auth=auth)
    with pytest.raises(SystemExit):
        launcher_main(["token", "--tenant", "ok", "--key", str(key.parent / "missing.pem")])


def test_the_launchers_keygen_and_token_commands_make_a_token_the_jwks_verifies(tmp_path, capsys):
    assert launcher_main(["keygen", "--dir", str(tmp_path / "keys")]) == 0
    capsys.readouterr()
    key, jwks = tmp_path / "keys" / "signing-key.pem", tmp_path / "keys" / "jwks.json"
    assert launcher_main(["token", "--key", str(key), "--tenant", "acme", "--role", "admin", "--ttl-hours", "2"]) == 0
    claims = _verify(capsys.readouterr().out.strip(), jwks, AuthSettings(jwks_file=jwks))
    assert (claims["tenant"], claims["role"], claims["exp"] - claims["iat"]) == ("acme", "admin", 7200)


def _filters(rendered: dict) -> list[str]:
    hcm = rendered["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    return [f["name"].rsplit(".", 1)[-1] for f in hcm["http_filters"]]


def test_auth_filters_come_before_the_transcoder_only_when_enabled(keys):
    _, _, auth = keys
    no_limits = EdgeSettings(client_rps=0, tenant_rps=0, anonymous_rps=0)
    # lua: the strict-JSON check (gateway/request_validation.py), right before the transcoder
    assert _filters(envoy_config.render(MeshSettings(), edge=no_limits)) == ["lua", "grpc_json_transcoder", "router"]
    assert _filters(envoy_config.render(MeshSettings(), auth=AuthSettings(enabled=False), edge=no_limits)) == [
        "lua", "grpc_json_transcoder", "router"]
    with pytest.raises(ValueError, match="no JWKS file"):
        envoy_config.render(MeshSettings(), auth=AuthSettings(), edge=no_limits)
    assert _filters(envoy_config.render(MeshSettings(), auth=auth, edge=no_limits)) == [
        "header_mutation", "jwt_authn", "rbac", "lua", "grpc_json_transcoder", "router"]
    # The rate limiters (on by default): per client address before auth, so a flood without a token (or with a
    # bad one) is limited too; per tenant after it, so the tenant it counts is the token's.
    assert _filters(envoy_config.render(MeshSettings(), auth=auth)) == [
        "client_rate_limit", "header_mutation", "jwt_authn", "rbac", "local_ratelimit", "lua", "grpc_json_transcoder",
        "router"]


def test_envoy_accepts_the_auth_config(keys, tmp_path):
    _, _, auth = keys
    config = envoy_config.write(tmp_path / "envoy.yaml", MeshSettings(), auth)
    result = subprocess.run([envoy_binary(), "--mode", "validate", "-c", str(config), "--disable-hot-restart"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]


def test_every_forwarded_request_names_a_subject(keys):
    """The token's ``sub`` (the JWT filter sets it first); else "-" with auth on (a token naming nobody, never taken
    for a call from inside the mesh) or "local" with auth off. A client's own header is dropped with auth on."""
    _, _, auth = keys

    def added(rendered: dict) -> dict[str, tuple[str, str]]:
        hcm = rendered["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
        host = hcm["route_config"]["virtual_hosts"][0]
        return {h["header"]["key"]: (h["header"]["value"], h["append_action"]) for h in host["request_headers_to_add"]}

    on = envoy_config.render(MeshSettings(), auth=auth)
    assert added(on)["x-docuthinker-subject"] == ("-", "ADD_IF_ABSENT")
    hcm = on["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    by_name = {f["name"]: f["typed_config"] for f in hcm["http_filters"]}
    strip, verify = by_name[envoy_config.HEADER_MUTATION], by_name["envoy.filters.http.jwt_authn"]
    assert {"remove": "x-docuthinker-subject"} in strip["mutations"]["request_mutations"]
    assert {"header_name": "x-docuthinker-subject", "claim_name": "sub"} in \
        verify["providers"]["docuthinker"]["claim_to_headers"]
    off = envoy_config.render(MeshSettings(), auth=AuthSettings(enabled=False))
    assert added(off)["x-docuthinker-subject"] == ("local", "ADD_IF_ABSENT")
