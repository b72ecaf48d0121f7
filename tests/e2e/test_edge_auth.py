"""Bearer-token auth at the real Envoy, in front of the session's real services.

A second Envoy, rendered with auth on, runs beside the mesh's open one, so both views of the same
data can be compared: a token's tenant decides what a caller sees, whatever x-tenant-id it sends.
"""

from __future__ import annotations

import subprocess
import time

import grpc
import httpx
import jwt
import pytest

from docuthinker.rag.v1 import rag_service_pb2 as rag_pb
from docuthinker.rag.v1 import rag_service_pb2_grpc as rag_grpc
from gateway import envoy_config
from gateway.auth import KEY_FILE, AuthSettings, keygen, mint
from services.launcher.mesh import envoy_binary, free_port, healthy_clusters

pytestmark = pytest.mark.e2e

NOTE = b"The Lisbon office keeps the spare badge printer in room 4.12."


@pytest.fixture(scope="module")
def secured(mesh, tmp_path_factory):
    """(base URL, signing key, auth settings) of an authenticating Envoy over the session's services."""
    root = tmp_path_factory.mktemp("edge-auth")
    _, jwks = keygen(root / "auth")
    auth = AuthSettings(jwks_file=jwks)
    ports = mesh.settings.model_copy(update={"gateway_port": free_port(), "gateway_admin_port": free_port()})
    config = envoy_config.write(root / "envoy.yaml", ports, auth)
    log = open(root / "envoy.log", "wb")  # noqa: SIM115 - closed below
    envoy = subprocess.Popen([envoy_binary(), "-c", str(config), "--disable-hot-restart", "--log-level", "warn",
                              "--base-id", str(ports.gateway_port)], stdout=log, stderr=subprocess.STDOUT)
    base = f"http://{ports.host}:{ports.gateway_port}"
    deadline = time.monotonic() + 60
    admin = f"http://127.0.0.1:{ports.gateway_admin_port}"
    while not {"rag", "nlp", "graph", "orchestrator", "openai_api"} <= healthy_clusters(admin):
        assert envoy.poll() is None and time.monotonic() < deadline, (root / "envoy.log").read_text()[-2000:]
        time.sleep(0.2)
    try:
        yield base, jwks.parent / KEY_FILE, auth
    finally:
        envoy.terminate()
        envoy.wait(10)
        log.close()


def _status(reply: httpx.Response) -> tuple[int, int]:
    return reply.status_code, reply.json()["code"]


def test_no_valid_token_no_access(secured):
    base, key, auth = secured
    with httpx.Client(base_url=base, timeout=30) as http:
        assert _status(http.get("/v1/documents")) == (401, 16)
        assert _status(http.get("/v1/documents", headers={"authorization": "Bearer not.a.jwt"})) == (401, 16)
        expired = mint(key, "acme", ttl_s=-3600, auth=auth)
        assert _status(http.get("/v1/documents", headers={"authorization": f"Bearer {expired}"})) == (401, 16)
        wrong_audience = mint(key, "acme", ttl_s=3600, auth=AuthSettings(audience="someone-else"))
        assert http.get("/v1/documents", headers={"authorization": f"Bearer {wrong_audience}"}).status_code == 403
        wrong_issuer = mint(key, "acme", ttl_s=3600, auth=AuthSettings(issuer="someone-else"))
        assert _status(http.get("/v1/documents", headers={"authorization": f"Bearer {wrong_issuer}"})) == (401, 16)
        # A token signed by a key the gateway does not know.
        stranger_key, _ = keygen(key.parent.parent / "stranger")
        forged = mint(stranger_key, "acme", ttl_s=3600, auth=auth)
        assert _status(http.get("/v1/documents", headers={"authorization": f"Bearer {forged}"})) == (401, 16)
        assert http.get("/v1/health").status_code == 200  # probes need no token


def test_a_token_without_a_tenant_is_forbidden(secured):
    base, key, auth = secured
    private = key.read_bytes()
    kid = jwt.get_unverified_header(mint(key, "x", ttl_s=60, auth=auth))["kid"]
    claims = {"iss": auth.issuer, "aud": auth.audience, "exp": int(time.time()) + 600}
    for extra in ({}, {"tenant": ""}, {"tenant": "no spaces allowed"}):
        token = jwt.encode({**claims, **extra}, private, algorithm="RS256", headers={"kid": kid})
        reply = httpx.get(f"{base}/v1/documents", headers={"authorization": f"Bearer {token}"}, timeout=30)
        assert _status(reply) == (403, 7), extra


@pytest.fixture(scope="module")
def acme_document(secured) -> str:
    """badges.txt, uploaded with acme's token while claiming to be another tenant."""
    base, key, auth = secured
    token = mint(key, "auth-e2e-acme", ttl_s=3600, auth=auth)
    reply = httpx.post(f"{base}/v1/documents:ingest", params={"filename": "badges.txt"}, content=NOTE, timeout=180,
                       headers={"authorization": f"Bearer {token}", "x-tenant-id": "auth-e2e-victim",
                                "content-type": "text/plain"})
    assert reply.status_code == 200, reply.text
    return reply.json()["result"]["document"]["document_id"]


def test_the_tenant_comes_from_the_token_not_the_header(secured, mesh, acme_document):
    base, key, auth = secured
    token = mint(key, "auth-e2e-acme", ttl_s=3600, auth=auth)
    spoof = {"authorization": f"Bearer {token}", "x-tenant-id": "auth-e2e-victim"}
    listed = httpx.get(f"{base}/v1/documents", headers=spoof, timeout=30).json()
    assert [d["document_id"] for d in listed["documents"]] == [acme_document]
    with httpx.Client(base_url=mesh.base_url, timeout=30) as open_gateway:  # the same data, by tenant
        owner = open_gateway.get("/v1/documents", headers={"x-tenant-id": "auth-e2e-acme"}).json()
        victim = open_gateway.get("/v1/documents", headers={"x-tenant-id": "auth-e2e-victim"}).json()
    assert [d["document_id"] for d in owner["documents"]] == [acme_document]
    assert victim.get("documents", []) == []


def test_grpc_through_the_gateway_carries_the_token(secured, acme_document):
    base, key, auth = secured
    with grpc.insecure_channel(base.removeprefix("http://")) as channel:
        stub = rag_grpc.RagServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.ListDocuments(rag_pb.ListDocumentsRequest(), timeout=30)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        token = mint(key, "auth-e2e-acme", ttl_s=3600, auth=auth)
        reply = stub.ListDocuments(rag_pb.ListDocumentsRequest(), timeout=30,
                                   metadata=[("authorization", f"Bearer {token}"), ("x-tenant-id", "default")])
        assert [d.document_id for d in reply.documents] == [acme_document]


def test_the_chat_api_takes_the_tenant_from_the_token(secured, acme_document):
    import openai

    base, key, auth = secured
    token = mint(key, "auth-e2e-acme", ttl_s=3600, auth=auth)
    question = [{"role": "user", "content": "Which room keeps the spare badge printer?"}]
    with openai.OpenAI(base_url=f"{base}/v1", api_key=token, max_retries=0, timeout=120,
                       default_headers={"x-tenant-id": "auth-e2e-victim"}) as sdk:
        reply = sdk.chat.completions.create(model="docuthinker", messages=question)
    assert "4.12" in reply.choices[0].message.content
    assert reply.choices[0].message.citations[0]["document_id"] == acme_document
    with openai.OpenAI(base_url=f"{base}/v1", api_key="not.a.jwt", max_retries=0, timeout=60) as stranger:
        with pytest.raises(openai.AuthenticationError):
            stranger.chat.completions.create(model="docuthinker", messages=question)
        with pytest.raises(openai.AuthenticationError):
            stranger.models.list()


def test_the_cli_sends_its_token_and_exits_4_without_one(secured, acme_document):
    import json
    import os
    import pathlib
    import sys

    script = pathlib.Path(sys.executable).parent / "docuthinker"
    assert script.is_file(), f"the docuthinker console script is missing ({script}): run `make setup`"
    base, key, auth = secured
    token = mint(key, "auth-e2e-acme", ttl_s=3600, auth=auth)
    env = {k: v for k, v in os.environ.items() if k not in ("DOCUTHINKER_TOKEN", "DOCUTHINKER_TENANT")}
    listed = subprocess.run([str(script), "--gateway", base, "docs", "--json"], capture_output=True, text=True,
                            timeout=120, env={**env, "DOCUTHINKER_TOKEN": token})
    assert listed.returncode == 0, listed.stderr
    assert acme_document in {d["document_id"] for d in json.loads(listed.stdout)}
    refused = subprocess.run([str(script), "--gateway", base, "docs", "--json"], capture_output=True, text=True,
                             timeout=120, env=env)
    assert refused.returncode == 4 and json.loads(refused.stdout)["error"]["http_status"] == 401
