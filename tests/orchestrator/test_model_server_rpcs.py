"""The Settings page's calls on the real orchestrator: anyone reads the model server, only an admin chooses one,
and a server that does not list its models is refused (nothing kept)."""

from __future__ import annotations

import grpc
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from docuthinker.orchestrator.v1 import orchestrator_service_pb2 as pb

ADMIN = [("x-docuthinker-role", "admin")]


@pytest.fixture
async def model_server():
    app = web.Application()
    app.router.add_get("/v1/models", lambda r: web.json_response({"data": [{"id": "llama3.2"}]}))
    running = TestServer(app, host="127.0.0.1")
    await running.start_server()
    yield str(running.make_url("/v1"))
    await running.close()


async def test_an_admin_chooses_the_server_others_read_it(make_orchestrator, model_server, tmp_path, monkeypatch):
    monkeypatch.setenv("DOCUTHINKER_MODEL_SERVER_FILE", str(tmp_path / "model-server.json"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    stub = await make_orchestrator().start()
    assert not (await stub.GetModelServer(pb.GetModelServerRequest())).configured
    request = pb.SetModelServerRequest(base_url=model_server, model="llama3.2", api_key="k")
    with pytest.raises(grpc.aio.AioRpcError) as user:
        await stub.SetModelServer(request)
    assert user.value.code() == grpc.StatusCode.PERMISSION_DENIED
    chosen = await stub.SetModelServer(request, metadata=ADMIN)
    assert chosen.configured and list(chosen.models) == ["llama3.2"] and chosen.server.has_api_key
    read = await stub.GetModelServer(pb.GetModelServerRequest())
    assert read.source == "settings" and read.server.model == "llama3.2" and read.server.context_window == 8192
    assert list(read.models) == ["llama3.2"] and not read.problem
    with pytest.raises(grpc.aio.AioRpcError) as down:
        await stub.SetModelServer(pb.SetModelServerRequest(base_url="http://127.0.0.1:9/v1", model="x"), metadata=ADMIN)
    assert down.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert (await stub.GetModelServer(pb.GetModelServerRequest())).server.base_url == model_server  # kept as it was
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await stub.SetModelServer(pb.SetModelServerRequest(base_url="not a url", model="x"), metadata=ADMIN)
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert not (await stub.SetModelServer(pb.SetModelServerRequest(), metadata=ADMIN)).configured
    assert not (await stub.GetModelServer(pb.GetModelServerRequest())).configured
