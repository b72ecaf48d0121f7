"""The mesh foundation through the real Envoy: each service answers, errors map to HTTP, streams end in-band."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import time

import httpx
import pytest

pytestmark = pytest.mark.e2e

GRPCURL = pathlib.Path(sys.executable).parent / "grpcurl"


def sse_events(body: str) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in body.splitlines() if line.startswith("data: ")]


@pytest.fixture(scope="module")
def client(mesh):
    with mesh.http(timeout=60) as http:
        yield http


def test_each_service_answers_through_envoy(client):
    analytics = client.post("/v1/nlp/analytics", json={"text": "One sentence here. Another one!\n\nNew paragraph."})
    assert analytics.status_code == 200, analytics.text
    body = analytics.json()
    assert (body["words"], body["sentences"], body["paragraphs"]) == (7, 3, 2)

    documents = client.get("/v1/documents")
    assert documents.status_code == 200, documents.text
    assert documents.json()["documents"] == []

    stats = client.get("/v1/graph/stats")
    assert stats.status_code == 200, stats.text
    assert int(stats.json()["documents"]) == 0

    health = client.get("/v1/health")
    assert health.status_code == 200, health.text
    services = {s["name"]: s["status"] for s in health.json()["services"]}
    assert services == {"orchestrator": "SERVING", "rag": "SERVING", "nlp": "SERVING", "graph": "SERVING"}
    assert health.json()["status"] == "SERVING"
    from services.models.cpu_features import cpu_features

    model = health.json()["embedding_model"]  # the CPU's int8 path is on record beside the model's identity
    assert model["runtime"] == "onnx-int8" and "/int8u8-smooth-" in model["identity"], model
    assert (model["int8_path"], model["vnni"]) == (cpu_features().int8_path, cpu_features().vnni), model
    assert model["kernel_check"] in ("passed", "not_run"), model


def test_server_stream_is_sse_and_ends_with_terminal_event(client):
    reply = client.post("/v1/nlp:analyze", json={"text": "Streams end in band.", "operations": ["OPERATION_ANALYTICS"]})
    assert reply.status_code == 200, reply.text
    events = sse_events(reply.text)
    assert events, reply.text
    assert events[0]["result"]["analytics"]["words"] == 4
    assert events[-1] == {"done": {"succeeded": 1, "failed": 0}}


def test_invalid_request_is_400_with_google_rpc_status(client):
    reply = client.post("/v1/nlp/analytics", json={"text": "   "})
    assert reply.status_code == 400
    status = reply.json()
    assert status["code"] == 3  # INVALID_ARGUMENT
    details = {d["@type"].rsplit("/", 1)[-1]: d for d in status["details"]}
    assert details["google.rpc.ErrorInfo"]["reason"] == "EMPTY_TEXT"
    violations = details["google.rpc.BadRequest"]["field_violations"]
    assert violations[0]["field"] == "text"


def test_malformed_json_and_unknown_query_parameter_are_400(client):
    assert client.post("/v1/nlp/analytics", content=b"{not json", headers={"content-type": "application/json"}).status_code == 400
    assert client.get("/v1/documents", params={"bogus": "1"}).status_code == 400


def test_unknown_route_is_404(client):
    assert client.get("/v1/no-such-thing").status_code == 404
    assert client.post("/v2/nlp/analytics", json={"text": "x"}).status_code == 404


def test_invalid_tenant_is_rejected_with_auth_off(open_gateway):
    """With auth off, x-tenant-id names the tenant (with auth on the gateway drops it and the token decides)."""
    reply = httpx.get(f"{open_gateway}/v1/documents", headers={"x-tenant-id": "../etc"}, timeout=60)
    assert reply.status_code == 400
    assert "tenant" in reply.json()["message"]


def test_stopped_service_gives_503_while_others_answer(mesh, client):
    mesh.stop_service("nlp")
    try:
        reply = client.post("/v1/nlp/analytics", json={"text": "Anyone there?"})
        assert reply.status_code == 503, reply.text
        assert client.get("/v1/documents").status_code == 200
        assert client.get("/v1/graph/stats").status_code == 200
        health = client.get("/v1/health")
        assert health.status_code == 200
        statuses = {s["name"]: s["status"] for s in health.json()["services"]}
        assert statuses["nlp"] == "UNREACHABLE" and statuses["rag"] == "SERVING"
        assert health.json()["status"] == "DEGRADED"
    finally:
        mesh.start_service("nlp")
    # Envoy's active health check marks the restarted host healthy within a few seconds.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if client.post("/v1/nlp/analytics", json={"text": "Back again."}).status_code == 200:
            break
        time.sleep(0.5)
    else:
        pytest.fail("nlp did not come back behind Envoy")


def _grpcurl(*args: str) -> str:
    result = subprocess.run([str(GRPCURL), "-plaintext", *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_grpcurl_lists_and_describes_every_service_by_reflection(mesh):
    listed: set[str] = set()
    for service in ("orchestrator", "rag", "nlp", "graph"):
        listed |= set(_grpcurl(mesh.grpc_target(service), "list").split())
    assert {
        "docuthinker.orchestrator.v1.OrchestratorService",
        "docuthinker.rag.v1.RagService",
        "docuthinker.nlp.v1.NlpService",
        "docuthinker.graph.v1.GraphService",
        "grpc.health.v1.Health",
    } <= listed
    described = _grpcurl(mesh.grpc_target("rag"), "describe", "docuthinker.rag.v1.RagService")
    assert "rpc UploadDocument" in described
    # Listing and describing are open; a real RPC at a service port needs the mesh credential.
    [(header, credential)] = mesh.grpc_metadata()
    reply = _grpcurl("-H", f"{header}: {credential}", "-d", '{"text": "Hello there. General Kenobi."}',
                     mesh.grpc_target("nlp"), "docuthinker.nlp.v1.NlpService/ComputeAnalytics")
    assert json.loads(reply)["sentences"] == 2
