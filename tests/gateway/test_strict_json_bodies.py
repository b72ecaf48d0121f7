"""The gateway's strict-JSON check: which routes it covers, their Lua patterns, and what it refuses."""

from __future__ import annotations

from gateway.request_validation import BodyValidator, JsonRoute, json_routes, lua_source

SEARCH = "/docuthinker.rag.v1.RagService/Search"


def test_json_routes_cover_json_bodies_only() -> None:
    routes = {r.rpc: r for r in json_routes()}
    assert routes[SEARCH].template == "/v1/search" and routes[SEARCH].body == "*"
    assert "/docuthinker.rag.v1.RagService/UploadDocument" not in routes  # raw bytes (HttpBody)
    assert "/docuthinker.rag.v1.RagService/StreamUploadDocument" not in routes  # a client stream
    assert all(r.http_method != "GET" for r in routes.values())


def test_templates_become_anchored_lua_patterns() -> None:
    route = JsonRoute("POST", "/v1/documents/{document_id}:reindex", "/x/Y", "x.Y", "*")
    assert route.lua_pattern == "^/v1/documents/[^/:]+:reindex$"
    assert JsonRoute("POST", "/v1/token-check", "/x/Y", "x.Y", "*").lua_pattern == "^/v1/token%-check$"
    assert JsonRoute("POST", "/v1/{name=files/**}", "/x/Y", "x.Y", "*").lua_pattern == "^/v1/files/.+$"
    assert '"/v1/search"' not in lua_source(json_routes(), "c") and '"^/v1/search$"' in lua_source(json_routes(), "c")


def test_unknown_fields_and_enum_names_are_refused_other_problems_left_to_the_transcoder() -> None:
    validator = BodyValidator()
    assert 'no field named "topk"' in validator.problem(SEARCH, b'{"query": "x", "topk": 3}')
    assert "Invalid enum value NOPE" in validator.problem(SEARCH, b'{"query": "x", "fusion": "NOPE"}')
    for fine in (b'{"query": "x", "topK": 3}', b'{"query": "x", "top_k": 3}', b'{"query": 7}', b"{not json", b"[]"):
        assert validator.problem(SEARCH, fine) is None, fine
    assert validator.problem("/no.Such/Rpc", b'{"anything": 1}') is None
