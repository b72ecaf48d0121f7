"""GET /v1/documents/{id}:content through the real gateway: the stored bytes with their content
type, sandboxed for browsers, and NOT_FOUND for another tenant's document or an unknown one."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

OWNER = {"x-tenant-id": "content-e2e"}
OTHER = {"x-tenant-id": "content-e2e-other"}
NOTE = b"# Pier notes\n\nThe ferry to the island leaves at seven every morning from pier four.\n"


@pytest.fixture(scope="module")
def client(mesh):
    with mesh.http(timeout=120) as c:
        yield c


@pytest.fixture(scope="module")
def document_id(client) -> str:
    reply = client.post("/v1/documents:ingest", params={"filename": "pier-notes.md"}, content=NOTE,
                        headers={**OWNER, "Content-Type": "text/markdown"})
    assert reply.status_code == 200, reply.text
    return reply.json()["result"]["document"]["document_id"]


def test_content_returns_the_stored_bytes_and_type(client, document_id):
    reply = client.get(f"/v1/documents/{document_id}:content", headers=OWNER)
    assert reply.status_code == 200, reply.text
    assert reply.content == NOTE
    assert reply.headers["content-type"].startswith("text/markdown")
    # Uploaded bytes on the app's origin run sandboxed if a browser opens them directly.
    assert reply.headers["content-security-policy"].startswith("sandbox")
    assert reply.headers["x-content-type-options"] == "nosniff"


def test_content_of_another_tenants_document_is_not_found(client, document_id):
    reply = client.get(f"/v1/documents/{document_id}:content", headers=OTHER)
    assert reply.status_code == 404
    body = reply.json()
    assert body["code"] == 5
    assert any(d.get("reason") == "DOCUMENT_NOT_FOUND" for d in body["details"])


def test_content_of_an_unknown_document_is_not_found(client):
    reply = client.get("/v1/documents/no-such-document:content", headers=OWNER)
    assert reply.status_code == 404
    assert reply.json()["code"] == 5
