"""The web app's routes in Envoy's config: exact paths, the right content types, the transcoder
and the token check off on them only, and nothing from node_modules or package files served."""

from __future__ import annotations

import pathlib

from gateway import envoy_config, static_site
from gateway.auth import AuthSettings, keygen
from services.runtime.config import MeshSettings


def make_site(root: pathlib.Path) -> pathlib.Path:
    (root / "js").mkdir(parents=True)
    (root / "vendor").mkdir()
    (root / "node_modules" / "x").mkdir(parents=True)
    (root / "index.html").write_text("<!doctype html>")
    (root / "js" / "app.js").write_text("export {};")
    (root / "vendor" / "pdf.min.mjs").write_text("export {};")
    (root / "styles.css").write_text("body {}")
    (root / "package.json").write_text("{}")
    (root / "node_modules" / "x" / "index.js").write_text("bad")
    (root / "notes.txt").write_text("not a served type")
    return root


def test_site_files_serves_the_app_and_vendor_files_only(tmp_path):
    files = static_site.site_files(make_site(tmp_path / "web"))
    assert set(files) == {"/", "/index.html", "/js/app.js", "/vendor/pdf.min.mjs", "/styles.css"}
    assert files["/"] == files["/index.html"]


def test_routes_answer_from_the_files_with_their_types(tmp_path):
    routes = {r["match"]["path"]: r for r in static_site.routes(["f1"], make_site(tmp_path / "web"))}
    module = routes["/vendor/pdf.min.mjs"]
    headers = {h["header"]["key"]: h["header"]["value"] for h in module["response_headers_to_add"]}
    assert headers["content-type"].startswith("text/javascript")
    assert module["direct_response"]["body"]["filename"].endswith("vendor/pdf.min.mjs")
    assert module["typed_per_filter_config"]["f1"]["disabled"] is True
    assert module["match"]["headers"][0]["string_match"]["exact"] == "GET"


def test_envoy_config_puts_the_site_before_the_rpcs_and_disables_auth_and_the_limiter_there(tmp_path):
    _, jwks = keygen(tmp_path / "auth")
    config = envoy_config.render(MeshSettings(), auth=AuthSettings(jwks_file=jwks))
    manager = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    route_config = manager["route_config"]
    routes = route_config["virtual_hosts"][0]["routes"]
    assert route_config["max_direct_response_body_size_bytes"] >= 2 * 1024 * 1024
    web = [r for r in routes if r["name"].startswith("web:")]
    assert web and routes[: len(web)] == web  # the site's exact paths come first
    assert all(not r["match"]["path"].startswith("/v1/") for r in web)
    disabled = set(web[0]["typed_per_filter_config"])
    assert disabled == {"envoy.filters.http.grpc_json_transcoder", "envoy.filters.http.jwt_authn",
                        "envoy.filters.http.rbac", "docuthinker.client_rate_limit"}
    content = next(r for r in routes if r["name"].endswith("/GetDocumentContent"))
    sandbox = {h["header"]["key"]: h["header"]["value"] for h in content["response_headers_to_add"]}
    assert sandbox["content-security-policy"].startswith("sandbox")
