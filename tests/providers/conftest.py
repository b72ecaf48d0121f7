"""A local HTTP server that plays a vendor API, one scripted reply per request.

Tests point the real SDK at it (base URL), script what the "vendor" answers (JSON, SSE,
errors, garbage, silence), and inspect what the SDK actually sent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from payloads import HUNG_S

Reply = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: Any


class VendorServer:
    def __init__(self) -> None:
        self.requests: list[Received] = []
        self._replies: list[Reply] = []
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()
        self.base_url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        self._closing.set()  # releases stalled replies
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.requests.append(Received(request.method, request.path, dict(request.query), headers, body))
        if not self._replies:
            return web.json_response({"error": {"message": "no scripted reply"}}, status=599)
        return await self._replies.pop(0)(request)

    # -- scripting -----------------------------------------------------------------------------

    def json(self, body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> None:
        async def reply(_: web.Request) -> web.StreamResponse:
            return web.json_response(body, status=status, headers=dict(headers or {}))

        self._replies.append(reply)

    def raw(self, text: str, status: int = 200, content_type: str = "application/json") -> None:
        async def reply(_: web.Request) -> web.StreamResponse:
            return web.Response(text=text, status=status, content_type=content_type)

        self._replies.append(reply)

    def sse(self, events: Iterable[tuple[str | None, Any]], *, delay_s: float = 0.0,
            hang_after: int | None = None) -> None:
        """Server-sent events: ``(event name or None, data)``; data dicts are JSON-encoded. ``hang_after``: send
        that many events, then nothing more until the test ends (a vendor hung mid-stream)."""
        events = list(events)

        async def reply(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
            await response.prepare(request)
            for sent, (name, data) in enumerate(events):
                if sent == hang_after:
                    await self._closing.wait()
                    return response
                payload = data if isinstance(data, str) else json.dumps(data)
                frame = (f"event: {name}\n" if name else "") + f"data: {payload}\n\n"
                await response.write(frame.encode())
                if delay_s:
                    await asyncio.sleep(delay_s)
            await response.write_eof()
            return response

        self._replies.append(reply)

    def stall(self, seconds: float = HUNG_S) -> None:
        """Accept the request and say nothing for ``seconds`` (a hung vendor; by default until the test ends)."""

        async def reply(_: web.Request) -> web.StreamResponse:
            try:
                await asyncio.wait_for(self._closing.wait(), seconds)
            except TimeoutError:
                pass
            return web.json_response({}, status=504)

        self._replies.append(reply)


@pytest.fixture
async def vendor():
    server = VendorServer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def make_vendor():
    """Starts as many vendor servers as a test needs (one per provider)."""
    servers: list[VendorServer] = []

    async def start() -> VendorServer:
        server = VendorServer()
        await server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()
