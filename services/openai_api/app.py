"""The HTTP handlers: OpenAI's ``POST /v1/chat/completions`` (JSON or SSE) and ``GET /v1/models``."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pydantic
from aiohttp import web

from services.openai_api import errors, wire
from services.openai_api.answers import AnswerEngine, Delta, Done, Question
from services.orchestrator.followups import FollowUpResolver
from services.runtime import mesh_auth
from services.runtime.request_context import TENANT_HEADER, TENANT_PATTERN

log = logging.getLogger("docuthinker.openai_api")
ENGINE = web.AppKey("engine", AnswerEngine)
DEFAULT_TENANT_KEY = web.AppKey("default_tenant", str)
HEALTH_PATH = "/healthz"
RESOLVER = FollowUpResolver()


def _json(body: dict[str, Any], status: int = 200) -> web.Response:
    return web.json_response(body, status=status, dumps=lambda o: json.dumps(o, ensure_ascii=False))


@web.middleware
async def openai_errors(request: web.Request, handler) -> web.StreamResponse:
    """Every failure in OpenAI's error shape, including aiohttp's own 404/405."""
    try:
        return await handler(request)
    except errors.ApiError as exc:
        return _json(exc.body(), exc.status)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        kind = "not_found_error" if exc.status == 404 else "invalid_request_error"
        return _json(errors.ApiError(exc.status, exc.reason, kind, exc.reason.lower().replace(" ", "_")).body(),
                     exc.status)
    except Exception:
        log.exception("chat completion failed")
        return _json(errors.ApiError(500, "internal error", "api_error", "internal").body(), 500)


def _tenant(request: web.Request) -> str:
    tenant = request.headers.get(TENANT_HEADER) or request.app[DEFAULT_TENANT_KEY]
    if not TENANT_PATTERN.match(tenant):
        raise errors.invalid_request("invalid tenant id in x-tenant-id: 1-64 letters, digits, '.', '_' or '-'",
                                     param=TENANT_HEADER, code="invalid_tenant")
    return tenant


async def _chat_request(request: web.Request) -> wire.ChatRequest:
    try:
        payload = await request.json()
    except ValueError:
        raise errors.invalid_request("the request body is not valid JSON", code="invalid_json") from None
    try:
        chat = wire.ChatRequest.model_validate(payload)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        raise errors.invalid_request(f"{param}: {first['msg']}" if param else first["msg"], param=param) from None
    if chat.model not in wire.MODELS:
        raise errors.ApiError(404, f"The model `{chat.model}` does not exist; available: {', '.join(wire.MODELS)}",
                              "invalid_request_error", "model_not_found", "model")
    if not chat.question:
        raise errors.invalid_request("messages must contain a user message with text", param="messages")
    return chat


async def chat_completions(request: web.Request) -> web.StreamResponse:
    chat = await _chat_request(request)
    # A follow-up ("when did she write it?") is read against the earlier messages, offline (no model).
    resolution = RESOLVER.resolve(chat.question, chat.history())
    question = Question(resolution.resolved, _tenant(request), tuple(chat.document_ids), chat.top_k,
                        agent=chat.model == "docuthinker-agent")
    engine = request.app[ENGINE]
    request_id = wire.completion_id()
    resolved = resolution.resolved if resolution.rewritten else ""
    if not chat.stream:
        return _json(wire.completion(request_id, chat.model, await engine.answer(question), chat.prompt_text, resolved))
    return await _stream(request, chat, engine, question, request_id)


async def _stream(request: web.Request, chat: wire.ChatRequest, engine: AnswerEngine, question: Question,
                  request_id: str) -> web.StreamResponse:
    events = engine.stream(question)
    # The first event is awaited before any byte is sent, so a request the engine refuses outright (bad
    # document id, invalid tenant, engine down) still gets its HTTP status; later failures go in-band.
    first = await anext(events)
    created = int(time.time())
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)

    async def send(body: dict[str, Any]) -> None:
        await response.write(f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode())

    await send(wire.chunk(request_id, chat.model, created, {"role": "assistant", "content": ""}))
    event = first
    try:
        while True:
            if isinstance(event, Delta):
                await send(wire.chunk(request_id, chat.model, created, {"content": event.text}))
            elif isinstance(event, Done):
                await send(wire.final_chunk(request_id, chat.model, created, event.answer))
                if chat.stream_options is not None and chat.stream_options.include_usage:
                    await send(wire.usage_chunk(request_id, chat.model, created, event.answer, chat.prompt_text))
                break
            event = await anext(events)
    except errors.ApiError as exc:
        await send(exc.body())  # OpenAI's SDKs raise APIError on a chunk carrying "error"
    except ConnectionResetError:  # the client went away: stop the engine's stream, nothing left to answer
        log.info("chat completion stream closed by the client")
        return response
    finally:
        await events.aclose()
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


async def models(request: web.Request) -> web.Response:
    return _json(wire.model_list())


async def health(request: web.Request) -> web.Response:
    return _json({"status": "SERVING"})


def _mesh_only(credential: str | None):
    """Like the gRPC ports (``services.runtime.mesh_auth``): only the mesh (Envoy) may call, since the
    tenant is taken from x-tenant-id; the health probe stays open."""
    expected = credential.encode() if credential else b""

    @web.middleware
    async def check(request: web.Request, handler) -> web.StreamResponse:
        if credential and request.path != HEALTH_PATH:
            if not mesh_auth.proven(request.headers.getall(mesh_auth.CREDENTIAL_HEADER, []), expected):
                raise errors.ApiError(401, "this port serves only the DocuThinker mesh: call through the gateway",
                                      "authentication_error", "mesh_credential_required")
        return await handler(request)

    return check


def create_app(engine: AnswerEngine, default_tenant: str, credential: str | None = None) -> web.Application:
    app = web.Application(middlewares=[openai_errors, _mesh_only(credential)], client_max_size=4 * 1024 * 1024)
    app[ENGINE] = engine
    app[DEFAULT_TENANT_KEY] = default_tenant
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_get("/v1/models", models)
    app.router.add_get(HEALTH_PATH, health)
    return app
