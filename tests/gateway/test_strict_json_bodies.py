"""The gateway's strict-JSON check: which routes it covers, their Lua patterns, and what it refuses.

The same filter refuses a declared body larger than its route takes, at the headers; the real Envoy runs it in
tests/e2e/test_hostile_mesh.py."""

from __future__ import annotations

from gateway.request_validation import (
    MAX_JSON_BYTES,
    BodyRoute,
    BodyValidator,
    base64_limit,
    json_routes,
    lua_source,
    raw_routes,
)

SEARCH = "/docuthinker.rag.v1.RagService/Search"


def test_json_routes_cover_json_bodies_only() -> None:
    routes = {r.rpc: r for r in json_routes()}
    assert routes[SEARCH].template == "/v1/search" and routes[SEARCH].body == "*"
    assert "/docuthinker.rag.v1.RagService/UploadDocumentBody" not in routes  # raw bytes (HttpBody)
    assert "/docuthinker.rag.v1.RagService/StreamUploadDocument" not in routes  # a client stream
    assert all(r.http_method != "GET" for r in routes.values())


def test_raw_body_routes_are_the_streamed_uploads() -> None:
    # An evaluation set is the one unary raw body: a small file, held within Envoy's 1 MiB buffer.
    assert {(r.template, r.rpc.rsplit("/", 1)[1]) for r in raw_routes()} == {
        ("/v1/documents", "UploadDocumentBody"), ("/v1/documents:ingest", "IngestDocumentBody"),
        ("/v1/query:spoken", "SpokenQueryBody"), ("/v1/eval-sets", "CreateEvalSet")}


def test_the_filter_checks_every_json_body_and_refuses_declared_sizes_over_the_routes_limit() -> None:
    source = lua_source(json_routes(), raw_routes(), "c", 1000)
    # No size or framing skips the check any more: only an empty body does.
    assert "length == nil" not in source and "handle:body()" in source
    assert f"length > {MAX_JSON_BYTES}" in source and "limit = 1000" in source
    assert f"local limit = {base64_limit(1000)}" in source
    assert base64_limit(3 * 1024 * 1024) == 5 * 1024 * 1024
    assert '"413"' in source


def test_templates_become_anchored_lua_patterns() -> None:
    route = BodyRoute("POST", "/v1/documents/{document_id}:reindex", "/x/Y", "x.Y", "*")
    assert route.lua_pattern == "^/v1/documents/[^/:]+:reindex$"
    assert BodyRoute("POST", "/v1/token-check", "/x/Y", "x.Y", "*").lua_pattern == "^/v1/token%-check$"
    assert BodyRoute("POST", "/v1/{name=files/**}", "/x/Y", "x.Y", "*").lua_pattern == "^/v1/files/.+$"
    source = lua_source(json_routes(), [], "c", 1)
    assert '"/v1/search"' not in source and '"^/v1/search$"' in source


def test_unknown_fields_and_enum_names_are_refused_other_problems_left_to_the_transcoder() -> None:
    validator = BodyValidator()
    assert 'no field named "topk"' in validator.problem(SEARCH, b'{"query": "x", "topk": 3}')
    assert "Invalid enum value NOPE" in validator.problem(SEARCH, b'{"query": "x", "fusion": "NOPE"}')
    for fine in (b'{"query": "x", "topK": 3}', b'{"query": "x", "top_k": 3}', b'{"query": 7}', b"{not json", b"[]"):
        assert validator.problem(SEARCH, fine) is None, fine
    assert validator.problem("/no.Such/Rpc", b'{"anything": 1}') is None
