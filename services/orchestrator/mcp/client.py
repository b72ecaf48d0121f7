"""MCP client: connects to external MCP servers over stdio and offers their tools to the agent loop.

Servers come from ``DOCUTHINKER_MCP_SERVERS``. Each connection lives in its own task for the
orchestrator's lifetime, because the SDK's stdio transport is an anyio context that must be
entered and exited by the same task. A server's tools are registered as
``mcp__<server>__<tool>`` with source ``mcp:<server>`` (vendor tool names allow neither ':'
nor '/'). A server that fails to start is logged and left out; the others still connect.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from services.orchestrator.settings import McpServerConfig
from services.orchestrator.tools import ToolDefinition, ToolRegistry
from services.runtime.errors import DeadlineExceeded, Unavailable

log = logging.getLogger("docuthinker.orchestrator.mcp_client")

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
MAX_TOOL_NAME = 64


def tool_name(server: str, tool: str) -> str:
    return f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"[:MAX_TOOL_NAME]


class McpToolError(RuntimeError):
    """The MCP server ran the tool and reported a failure."""


@dataclass(frozen=True)
class ServerStatus:
    name: str
    connected: bool
    tools: tuple[str, ...]
    error: str = ""


class McpConnection:
    def __init__(self, config: McpServerConfig, timeout_s: float) -> None:
        self.config = config
        self._timeout_s = timeout_s
        self._session: ClientSession | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.tools: list[Any] = []
        self.error = ""

    async def start(self) -> bool:
        self._task = asyncio.create_task(self._hold(), name=f"mcp:{self.config.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), self._timeout_s)
        except TimeoutError:
            self.error = f"no answer within {self._timeout_s:.0f}s"
            await self.close()
        return self._session is not None

    async def _hold(self) -> None:
        params = StdioServerParameters(
            command=self.config.command, args=list(self.config.args), env=dict(self.config.env) or None
        )
        try:
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                self.tools = list((await session.list_tools()).tools)
                self._session = session
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:  # noqa: BLE001 - one bad server must not stop the orchestrator
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("MCP server unavailable", extra={"fields": {"server": self.config.name, "error": self.error}})
        finally:
            self._session = None
            self._ready.set()

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        session = self._session
        if session is None:
            raise Unavailable(f"MCP server {self.config.name} is not connected: {self.error or 'closed'}",
                              reason="MCP_SERVER_UNAVAILABLE", metadata={"server": self.config.name})
        try:
            result = await session.call_tool(tool, dict(arguments),
                                             read_timeout_seconds=timedelta(seconds=self._timeout_s))
        except TimeoutError:
            raise DeadlineExceeded(f"MCP tool {self.config.name}/{tool} timed out", reason="MCP_TIMEOUT") from None
        texts = [getattr(block, "text", "") for block in result.content if getattr(block, "type", "") == "text"]
        if result.isError:
            raise McpToolError("\n".join(texts) or f"{tool} failed")
        if result.structuredContent is not None:
            return result.structuredContent
        return "\n".join(texts)

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, 5)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()


class McpHub:
    """All configured external servers; registers their tools in the agent's registry."""

    def __init__(self, configs: Sequence[McpServerConfig], registry: ToolRegistry, timeout_s: float = 30.0) -> None:
        self._connections = [McpConnection(c, timeout_s) for c in configs]
        self._registry = registry

    async def start(self) -> None:
        await asyncio.gather(*(self._connect(c) for c in self._connections))

    async def _connect(self, connection: McpConnection) -> None:
        if not await connection.start():
            return
        source = f"mcp:{connection.config.name}"
        for tool in connection.tools:
            definition = ToolDefinition(
                name=tool_name(connection.config.name, tool.name),
                description=tool.description or f"{tool.name} (MCP server {connection.config.name})",
                input_schema=dict(tool.inputSchema or {"type": "object"}),
                source=source,
            )
            self._registry.register(definition, _runner(connection, tool.name))
        log.info("MCP server connected", extra={"fields": {"server": connection.config.name,
                                                          "tools": len(connection.tools)}})

    def status(self) -> list[ServerStatus]:
        return [
            ServerStatus(c.config.name, c.tools != [] and not c.error, tuple(t.name for t in c.tools), c.error)
            for c in self._connections
        ]

    async def stop(self) -> None:
        for connection in self._connections:
            self._registry.remove_source(f"mcp:{connection.config.name}")
        await asyncio.gather(*(c.close() for c in self._connections))


def _runner(connection: McpConnection, tool: str):
    async def run(arguments: Mapping[str, Any], tenant: str) -> Any:
        # An external MCP server is outside the mesh's tenancy: it gets the arguments only.
        return await connection.call(tool, arguments)

    return run
