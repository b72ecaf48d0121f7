"""The serving benchmark's REST client through the real Envoy agrees with its direct gRPC client."""

from __future__ import annotations

import pytest

from bench.serving_clients import EmptyReply, GrpcClient, RestClient

pytestmark = pytest.mark.e2e

TENANT = "bench-e2e"
TEXT = """Benchmark notes

The Lyon warehouse stores spare turbine blades for the northern wind farms.

Every turbine blade is inspected every six months by the maintenance team.

The cafeteria serves lunch from noon until two o'clock.
"""


@pytest.fixture(scope="module")
def uploaded(mesh) -> str:
    with mesh.http(timeout=120) as http:
        reply = http.post("/v1/documents", params={"filename": "bench-notes.txt"}, content=TEXT.encode(),
                          headers={"x-tenant-id": TENANT, "content-type": "text/plain"})
    assert reply.status_code == 200, reply.text
    return TENANT


@pytest.mark.parametrize("operation", ["search", "query"])
async def test_rest_and_grpc_clients_return_the_same_ranking(mesh, uploaded, operation):
    rest, grpc_client = RestClient(mesh.base_url, mesh.mint), GrpcClient(mesh.grpc_target("rag"), mesh.grpc_metadata())
    try:
        question = "How often are turbine blades inspected?"
        via_envoy = await rest.factory(operation, uploaded)(question)
        direct = await grpc_client.factory(operation, uploaded)(question)
        assert via_envoy == direct and len(via_envoy) >= 1
    finally:
        await rest.close()
        await grpc_client.close()


async def test_rest_client_refuses_an_empty_result(mesh):
    rest = RestClient(mesh.base_url, mesh.mint)
    try:
        with pytest.raises(EmptyReply):
            await rest.factory("search", "bench-e2e-nobody")("anything at all")
    finally:
        await rest.close()
