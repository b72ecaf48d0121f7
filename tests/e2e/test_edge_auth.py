"""Security of the running mesh, through the real Envoy and at the services' own ports.

The session mesh runs as ``make run`` does: auth on, a local signing key, the mesh credential on
every service port. ``open_gateway`` is a second Envoy over the same services with auth
explicitly off, so both views of the same data can be compared.

- the gateway: no token, a forged or expired one -> 401; a token without a usable tenant, or a
  user asking for another tenant's records (an admin's right) -> 403; internal RPCs -> 404;
- the service ports: a caller without the mesh credential is refused (UNAUTHENTICATED), whatever
  x-tenant-id it claims; one with it is served.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time

import grpc
import httpx
import jwt
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from docuthinker.graph.v1 import graph_service_pb2 as graph_pb
from docuthinker.graph.v1 import graph_service_pb2_grpc as graph_grpc
from docuthinker.nlp.v1 import nlp_service_pb2 as nlp_pb
from docuthinker.nlp.v1 import nlp_service_pb2_grpc as nlp_grpc
from docuthinker.orchestrator.v1 import orchestrator_service_pb2 as orch_pb
from docuthinker.orchestrator.v1 import orchestrator_service_pb2_grpc as orch_grpc
from docuthinker.rag.v1 import rag_service_pb2 as rag_pb
from docuthinker.rag.v1 import rag_service_pb2_grpc as rag_grpc
from gateway.auth import AuthSettings, keygen, mint
from services.runtime.mesh_auth import CREDENTIAL_HEADER

pytestmark = pytest.mark.e2e

NOTE = b"The Lisbon office keeps the spare badge printer in room 4.12."
ACME, VICTIM = "auth-e2e-acme", "auth-e2e-victim"


@pytest.fixture(scope="module")
def secured(mesh):
    """(base URL, signing key, auth settings) of the session mesh's authenticating gateway."""
    assert mesh.auth.enabled and mesh.local_auth.signing_key is not None, "the test mesh runs with auth on"
    return mesh.base_url, mesh.local_auth.signing_key, mesh.auth


def _status(reply: httpx.Response) -> tuple[int, int]:
    return reply.status_code, reply.json()["code"]


def _reason(reply: httpx.Response) -> str:
    return next(d["reason"] for d in reply.json()["details"] if d["@type"].endswith("google.rpc.ErrorInfo"))


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


# -- 401: no token, forged, expired -------------------------------------------------------
def test_no_valid_token_no_access(secured):
    base, key, auth = secured
    with httpx.Client(base_url=base, timeout=30) as http:
        assert _status(http.get("/v1/documents")) == (401, 16)
        assert _status(http.get("/v1/documents", headers=_bearer("not.a.jwt"))) == (401, 16)
        expired = mint(key, "acme", ttl_s=-3600, auth=auth)
        assert _status(http.get("/v1/documents", headers=_bearer(expired))) == (401, 16)
        wrong_audience = mint(key, "acme", ttl_s=3600, auth=AuthSettings(audience="someone-else"))
        assert http.get("/v1/documents", headers=_bearer(wrong_audience)).status_code == 403
        wrong_issuer = mint(key, "acme", ttl_s=3600, auth=AuthSettings(issuer="someone-else"))
        assert _status(http.get("/v1/documents", headers=_bearer(wrong_issuer))) == (401, 16)
        # A token signed by a key the gateway does not know, claiming the admin role.
        stranger_key, _ = keygen(key.parent.parent / "stranger-keys")
        forged = mint(stranger_key, "acme", ttl_s=3600, auth=auth, role="admin")
        assert _status(http.get("/v1/dlq", headers=_bearer(forged))) == (401, 16)
        # A real token whose claims were edited (another tenant, the admin role): its signature no longer matches.
        header, payload, signature = mint(key, "acme", ttl_s=3600, auth=auth).split(".")
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        edited = base64.urlsafe_b64encode(json.dumps({**claims, "tenant": VICTIM, "role": "admin"}).encode())
        tampered = f"{header}.{edited.rstrip(b'=').decode()}.{signature}"
        assert _status(http.get("/v1/dlq", headers=_bearer(tampered))) == (401, 16)
        assert http.get("/v1/health").status_code == 200  # probes need no token


# -- 403: no usable tenant, another tenant's records, the admin role ----------------------
def test_a_token_without_a_tenant_is_forbidden(secured):
    base, key, auth = secured
    private = key.read_bytes()
    kid = jwt.get_unverified_header(mint(key, "x", ttl_s=60, auth=auth))["kid"]
    claims = {"iss": auth.issuer, "aud": auth.audience, "exp": int(time.time()) + 600}
    for extra in ({}, {"tenant": ""}, {"tenant": "no spaces allowed"}):
        token = jwt.encode({**claims, **extra}, private, algorithm="RS256", headers={"kid": kid})
        reply = httpx.get(f"{base}/v1/documents", headers=_bearer(token), timeout=30)
        assert _status(reply) == (403, 7), extra


@pytest.mark.parametrize("path", ["/v1/costs", "/v1/dlq"])
def test_a_user_may_not_read_another_tenants_costs_or_dead_letters(secured, open_gateway, path):
    base, key, auth = secured
    user = mint(key, ACME, ttl_s=600, auth=auth)
    with httpx.Client(base_url=base, timeout=60) as http:
        assert http.get(path, headers=_bearer(user)).status_code == 200
        assert http.get(path, params={"tenant": ACME}, headers=_bearer(user)).status_code == 200
        refused = http.get(path, params={"tenant": VICTIM}, headers=_bearer(user))
        assert _status(refused) == (403, 7) and _reason(refused) == "ADMIN_ROLE_REQUIRED", refused.text
        # The role comes from the token alone: a client's role header is dropped at the gateway.
        claimed = http.get(path, params={"tenant": VICTIM}, headers={**_bearer(user), "x-docuthinker-role": "admin"})
        assert _status(claimed) == (403, 7)
        admin = mint(key, ACME, ttl_s=600, auth=auth, role="admin")
        assert http.get(path, params={"tenant": VICTIM}, headers=_bearer(admin)).status_code == 200
    # With auth explicitly off, every caller is an admin (and may claim any tenant anyway).
    assert httpx.get(f"{open_gateway}{path}", params={"tenant": VICTIM}, timeout=60).status_code == 200


def test_admin_sees_mesh_wide_costs_a_user_only_its_tenants(secured):
    base, key, auth = secured
    with httpx.Client(base_url=base, timeout=60) as http:
        user = http.get("/v1/costs", headers=_bearer(mint(key, ACME, ttl_s=600, auth=auth))).json()
        admin = http.get("/v1/costs", headers=_bearer(mint(key, ACME, ttl_s=600, auth=auth, role="admin"))).json()
    assert user["tenant"] == admin["tenant"] == ACME
    assert user["daily_spent"] == 0, "the mesh's spend is an admin's to see"
    assert float(user["total_cost"]) <= float(admin["total_cost"])


# -- 404: internal RPCs are not routed -------------------------------------------------------
def test_internal_rpcs_are_not_routed_by_the_gateway(secured, mesh, open_gateway):
    base, key, auth = secured
    admin = _bearer(mint(key, ACME, ttl_s=600, auth=auth, role="admin"))
    upsert = [{"document": {"document_id": "phantom", "title": "Injected"}}, {"topic": {"name": "x", "weight": 1}}]
    for gateway, headers in ((base, admin), (open_gateway, {"x-tenant-id": VICTIM})):
        with httpx.Client(base_url=gateway, timeout=30, headers=headers) as http:
            for reply in (http.post("/v1/graph/documents:upsert", json=upsert),
                          http.delete("/v1/graph/documents/phantom")):
                assert _status(reply) == (404, 5), reply.text
                assert reply.headers["content-type"].startswith("application/json")
        with grpc.insecure_channel(gateway.removeprefix("http://")) as channel:
            stub = graph_grpc.GraphServiceStub(channel)
            metadata = tuple((k.lower(), v) for k, v in headers.items())
            with pytest.raises(grpc.RpcError) as refused:
                stub.DeleteDocument(graph_pb.DeleteDocumentRequest(document_id="phantom"), metadata=metadata,
                                    timeout=30)
            assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED  # gRPC's reading of Envoy's 404
            with pytest.raises(grpc.RpcError) as refused:
                stub.UpsertDocumentFacts(iter([graph_pb.UpsertDocumentFactsRequest(
                    document=graph_pb.DocumentNode(document_id="phantom"))]), metadata=metadata, timeout=30)
            assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
    # Public graph reads stay routed.
    assert httpx.get(f"{base}/v1/graph/stats", headers=admin, timeout=30).status_code == 200


# -- service ports: only the mesh ---------------------------------------------------------
CHEAP_CALLS = {
    "rag": lambda ch, md: rag_grpc.RagServiceStub(ch).ListDocuments(rag_pb.ListDocumentsRequest(), metadata=md,
                                                                     timeout=30),
    "nlp": lambda ch, md: nlp_grpc.NlpServiceStub(ch).ComputeAnalytics(
        nlp_pb.ComputeAnalyticsRequest(text="One. Two."), metadata=md, timeout=30),
    "graph": lambda ch, md: graph_grpc.GraphServiceStub(ch).GetGraphStats(graph_pb.GetGraphStatsRequest(),
                                                                           metadata=md, timeout=30),
    "orchestrator": lambda ch, md: orch_grpc.OrchestratorServiceStub(ch).ListCircuits(
        orch_pb.ListCircuitsRequest(), metadata=md, timeout=30),
}
"""One cheap RPC of each service: call(channel, metadata)."""


@pytest.mark.parametrize("service", ["rag", "nlp", "graph", "orchestrator"])
def test_a_service_port_serves_only_the_mesh(mesh, service):
    call = CHEAP_CALLS[service]
    forged = (("x-tenant-id", VICTIM), ("x-docuthinker-role", "admin"))
    with grpc.insecure_channel(mesh.grpc_target(service)) as channel:
        for metadata in (forged, (*forged, (CREDENTIAL_HEADER, "guessed")),
                         (*forged, *mesh.grpc_metadata(), (CREDENTIAL_HEADER, "a second one"))):
            with pytest.raises(grpc.RpcError) as refused:
                call(channel, metadata)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED, metadata
            assert "mesh" in refused.value.details()
        call(channel, mesh.grpc_metadata(VICTIM))  # the mesh's own credential: served
        # Health stays open (Envoy's and the launcher's probes), and says nothing but SERVING.
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert health.status == health_pb2.HealthCheckResponse.SERVING


def test_a_forged_tenant_at_a_service_port_reaches_nothing(mesh, secured, acme_document):
    """Without the credential, claiming to be acme at rag's or graph's port neither reads nor deletes acme's data."""
    with grpc.insecure_channel(mesh.grpc_target("rag")) as channel:
        stub = rag_grpc.RagServiceStub(channel)
        for call in (lambda: stub.ListDocuments(rag_pb.ListDocumentsRequest(), metadata=[("x-tenant-id", ACME)],
                                                timeout=30),
                     lambda: stub.DeleteDocument(rag_pb.DeleteDocumentRequest(document_id=acme_document),
                                                 metadata=[("x-tenant-id", ACME)], timeout=30)):
            with pytest.raises(grpc.RpcError) as refused:
                call()
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with grpc.insecure_channel(mesh.grpc_target("graph")) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            graph_grpc.GraphServiceStub(channel).DeleteDocument(
                graph_pb.DeleteDocumentRequest(document_id=acme_document), metadata=[("x-tenant-id", ACME)], timeout=30)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    base, key, auth = secured
    listed = httpx.get(f"{base}/v1/documents", headers=_bearer(mint(key, ACME, ttl_s=600, auth=auth)), timeout=30)
    assert [d["document_id"] for d in listed.json()["documents"]] == [acme_document]


def test_the_chat_api_port_serves_only_the_mesh(mesh):
    port = mesh.settings.openai_api_port
    question = {"model": "docuthinker", "messages": [{"role": "user", "content": "Which room?"}]}
    reply = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=question, timeout=30,
                       headers={"x-tenant-id": ACME})
    assert reply.status_code == 401 and reply.json()["error"]["code"] == "mesh_credential_required"
    assert httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=30).status_code == 401
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30).status_code == 200
    [(header, credential)] = mesh.grpc_metadata()
    assert httpx.get(f"http://127.0.0.1:{port}/v1/models", headers={header: credential}, timeout=30).status_code == 200


# -- the tenant comes from the token ------------------------------------------------------
@pytest.fixture(scope="module")
def acme_document(secured) -> str:
    """badges.txt, uploaded with acme's token while claiming to be another tenant."""
    base, key, auth = secured
    token = mint(key, ACME, ttl_s=3600, auth=auth)
    reply = httpx.post(f"{base}/v1/documents:ingest", params={"filename": "badges.txt"}, content=NOTE, timeout=180,
                       headers={**_bearer(token), "x-tenant-id": VICTIM, "content-type": "text/plain"})
    assert reply.status_code == 200, reply.text
    return reply.json()["result"]["document"]["document_id"]


def test_the_tenant_comes_from_the_token_not_the_header(secured, open_gateway, acme_document):
    base, key, auth = secured
    token = mint(key, ACME, ttl_s=3600, auth=auth)
    spoof = {**_bearer(token), "x-tenant-id": VICTIM}
    listed = httpx.get(f"{base}/v1/documents", headers=spoof, timeout=30).json()
    assert [d["document_id"] for d in listed["documents"]] == [acme_document]
    with httpx.Client(base_url=open_gateway, timeout=30) as open_http:  # the same data, by tenant, with auth off
        owner = open_http.get("/v1/documents", headers={"x-tenant-id": ACME}).json()
        victim = open_http.get("/v1/documents", headers={"x-tenant-id": VICTIM}).json()
    assert [d["document_id"] for d in owner["documents"]] == [acme_document]
    assert victim.get("documents", []) == []


def test_grpc_through_the_gateway_carries_the_token(secured, acme_document):
    base, key, auth = secured
    with grpc.insecure_channel(base.removeprefix("http://")) as channel:
        stub = rag_grpc.RagServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.ListDocuments(rag_pb.ListDocumentsRequest(), timeout=30)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        token = mint(key, ACME, ttl_s=3600, auth=auth)
        reply = stub.ListDocuments(rag_pb.ListDocumentsRequest(), timeout=30,
                                   metadata=[("authorization", f"Bearer {token}"), ("x-tenant-id", "default")])
        assert [d.document_id for d in reply.documents] == [acme_document]


def test_the_chat_api_takes_the_tenant_from_the_token(secured, acme_document):
    import openai

    base, key, auth = secured
    token = mint(key, ACME, ttl_s=3600, auth=auth)
    question = [{"role": "user", "content": "Which room keeps the spare badge printer?"}]
    with openai.OpenAI(base_url=f"{base}/v1", api_key=token, max_retries=0, timeout=120,
                       default_headers={"x-tenant-id": VICTIM}) as sdk:
        reply = sdk.chat.completions.create(model="docuthinker", messages=question)
    assert "4.12" in reply.choices[0].message.content
    assert reply.choices[0].message.citations[0]["document_id"] == acme_document
    with openai.OpenAI(base_url=f"{base}/v1", api_key="not.a.jwt", max_retries=0, timeout=60) as stranger:
        with pytest.raises(openai.AuthenticationError):
            stranger.chat.completions.create(model="docuthinker", messages=question)
        with pytest.raises(openai.AuthenticationError):
            stranger.models.list()


def test_the_cli_sends_its_token_and_exits_4_without_one(secured, acme_document, tmp_path):
    import json
    import os
    import pathlib
    import sys

    script = pathlib.Path(sys.executable).parent / "docuthinker"
    assert script.is_file(), f"the docuthinker console script is missing ({script}): run `make setup`"
    base, key, auth = secured
    token = mint(key, ACME, ttl_s=3600, auth=auth)
    env = {k: v for k, v in os.environ.items() if k not in ("DOCUTHINKER_TOKEN", "DOCUTHINKER_TENANT")}
    env["DOCUTHINKER_TOKEN_FILE"] = str(tmp_path / "no-token-here")
    listed = subprocess.run([str(script), "--gateway", base, "docs", "--json"], capture_output=True, text=True,
                            timeout=120, env={**env, "DOCUTHINKER_TOKEN": token})
    assert listed.returncode == 0, listed.stderr
    assert acme_document in {d["document_id"] for d in json.loads(listed.stdout)}
    refused = subprocess.run([str(script), "--gateway", base, "docs", "--json"], capture_output=True, text=True,
                             timeout=120, env=env)
    assert refused.returncode == 4 and json.loads(refused.stdout)["error"]["http_status"] == 401
