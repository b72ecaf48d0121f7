"""The OpenAPI document generated from the protos: one operation per HTTP rule, strict bodies, raw uploads."""

from __future__ import annotations

import schemathesis

from gateway.openapi import document
from gateway.request_validation import json_routes


def test_every_http_rule_is_an_operation_with_strict_json_bodies() -> None:
    doc = document()
    operations = {(verb.upper(), path): op for path, verbs in doc["paths"].items() for verb, op in verbs.items()}
    for route in json_routes():  # every JSON-body route the gateway checks strictly
        body = operations[(route.http_method, route.template.replace("=**", ""))]["requestBody"]
        schema = body["content"]["application/json"]["schema"]
        assert schema.get("additionalProperties") is False, route
    search = operations[("POST", "/v1/search")]["requestBody"]["content"]["application/json"]["schema"]
    assert search["properties"]["fusion"]["enum"][0] == "FUSION_METHOD_UNSPECIFIED"
    upload = operations[("POST", "/v1/documents")]
    assert "application/octet-stream" in upload["requestBody"]["content"]
    assert {p["name"] for p in upload["parameters"]} >= {"filename"}
    get = operations[("GET", "/v1/documents/{document_id}")]
    assert [p["in"] for p in get["parameters"]] == ["path"]
    assert "google.rpc.Status" in doc["components"]["schemas"]
    loaded = [r.ok() for r in schemathesis.openapi.from_dict(doc).get_all_operations()]
    assert len(loaded) == len(operations)
