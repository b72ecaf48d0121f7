"""The Settings page's model server: a file every router reads, a provider offered only while it names a server,
checked by listing its models. The server here is a small OpenAI-compatible HTTP app on loopback."""

from __future__ import annotations

import json
import stat
import time

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from services.providers.base import GenerationRequest, Message
from services.providers.model_server import ConfiguredServerProvider, ModelServer, ModelServerFile, check, probe
from services.providers.router import Router
from services.providers.settings import ProviderSettings
from services.runtime.errors import FailedPrecondition, InvalidArgument


@pytest.fixture
async def server():
    """Lists two models and answers every chat completion with the model's name and the last message."""
    seen: list[dict] = []

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "llama3.2"}, {"id": "qwen2.5"}]})

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append({"body": body, "auth": request.headers.get("Authorization", "")})
        text = f"{body['model']} says: {body['messages'][-1]['content']}"
        return web.json_response({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                  "choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": text}}],
                                  "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}})

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    running = TestServer(app, host="127.0.0.1")
    await running.start_server()
    yield str(running.make_url("/v1")), seen
    await running.close()


def test_the_file_is_private_read_again_when_it_changes_and_forgettable(tmp_path):
    now = [0.0]
    file = ModelServerFile(tmp_path / "settings" / "model-server.json", clock=lambda: now[0])
    assert file.read() is None
    file.write(ModelServer("http://127.0.0.1:11434/v1", "llama3.2", "secret"))
    assert file.read() == ModelServer("http://127.0.0.1:11434/v1", "llama3.2", "secret")
    assert stat.S_IMODE(file.path.stat().st_mode) == 0o600
    other = ModelServerFile(file.path, clock=lambda: now[0])  # another process's view
    assert other.read().model == "llama3.2"
    file.write(ModelServer("http://127.0.0.1:8081/v1", "qwen2.5"))
    assert other.read().model == "llama3.2"  # looked at again a second later at most
    now[0] += 1.5
    assert other.read().model == "qwen2.5"
    file.write(None)
    now[0] += 1.5
    assert other.read() is None
    file.path.write_text("{not json")
    now[0] += 1.5
    assert other.read() is None


def test_a_server_is_checked_before_it_is_kept():
    assert check(ModelServer(" http://127.0.0.1:11434/v1/ ", " llama3.2 ")).base_url == "http://127.0.0.1:11434/v1"
    with pytest.raises(InvalidArgument) as bad:
        check(ModelServer("ftp://x", "", context_window=10))
    assert {v.field for v in bad.value.violations} == {"base_url", "model", "context_window"}


async def test_the_models_are_listed_or_the_server_is_refused(server):
    base_url, _ = server
    assert await probe(ModelServer(base_url, "llama3.2")) == ["llama3.2", "qwen2.5"]
    with pytest.raises(FailedPrecondition) as down:
        await probe(ModelServer("http://127.0.0.1:9/v1", "llama3.2"))
    assert down.value.reason == "MODEL_SERVER_UNREACHABLE"


async def test_the_router_offers_the_server_only_once_it_is_chosen_and_it_costs_nothing(server, tmp_path):
    base_url, seen = server
    settings = ProviderSettings(model_server_file=tmp_path / "server.json", provider_order="openai,local")
    router = Router.from_settings(settings)
    assert router.providers_for("rewrite") == ["local"]  # no server chosen: the local model, as before
    ModelServerFile(settings.model_server_file).write(ModelServer(base_url, "qwen2.5", "k", 4096))
    time.sleep(1.1)  # another process's choice is seen within a second
    assert router.providers_for("rewrite") == ["openai", "local"]
    assert router.providers_for("answer") == ["openai"]
    result = await router.generate("rewrite", GenerationRequest(messages=[Message("user", "plainly")], max_tokens=20))
    assert result.text == "qwen2.5 says: plainly" and result.provider == "openai"
    assert result.usage.cost_usd == 0.0 and seen[-1]["auth"] == "Bearer k"
    assert router.provider("openai").context_window == 4096


def test_a_provider_from_the_environment_wins_over_the_file(tmp_path):
    settings = ProviderSettings(model_server_file=tmp_path / "server.json", OPENAI_BASE_URL="http://127.0.0.1:1/v1")
    provider = Router.from_settings(settings).provider("openai")
    assert not isinstance(provider, ConfiguredServerProvider)


def test_the_file_holds_json(tmp_path):
    file = ModelServerFile(tmp_path / "s.json")
    file.write(ModelServer("http://h/v1", "m"))
    assert json.loads(file.path.read_text())["base_url"] == "http://h/v1"
