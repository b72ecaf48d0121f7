"""One error contract through the real gateway and mesh: Envoy's own refusals and the services'
errors are both google.rpc.Status JSON with the matching HTTP status."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def http(mesh):
    with mesh.http(timeout=60) as client:
        yield client


def _reason(body: dict) -> str:
    return next(d["reason"] for d in body["details"] if d["@type"].endswith("google.rpc.ErrorInfo"))


def test_gateway_refusals_are_status_json(http, mesh):
    cases = [
        (http.post("/v1/search", content=b"{not json"), 400, "BAD_REQUEST"),
        (http.post("/v1/search", json={"query": 7}), 400, "BAD_REQUEST"),
        (http.get("/v1/documents?no_such_parameter=1"), 400, "BAD_REQUEST"),
        (http.get("/v1/no/such/route"), 404, "NOT_FOUND"),
    ]
    limit = int(mesh.env.get("DOCUTHINKER_MAX_UPLOAD_BYTES", 25 * 1024 * 1024))
    cases.append((http.post("/v1/documents?filename=huge.txt", content=b"a" * (limit + 1024),
                            headers={"content-type": "text/plain"}), 413, "REQUEST_TOO_LARGE"))
    for reply, status, reason in cases:
        assert reply.status_code == status, reply.text[:300]
        assert reply.headers["content-type"].startswith("application/json"), reply.headers
        body = reply.json()
        assert set(body) >= {"code", "message", "details"} and _reason(body) == reason, body


def test_a_service_error_keeps_its_own_details(http):
    reply = http.post("/v1/nlp/analytics", json={"text": ""})
    assert reply.status_code == 400, reply.text
    body = reply.json()
    assert body["code"] == 3 and _reason(body) != "BAD_REQUEST"  # the service's reason, not the gateway's
    assert any(d["@type"].endswith("google.rpc.BadRequest") for d in body["details"])
