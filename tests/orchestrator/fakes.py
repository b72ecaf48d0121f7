"""Small fakes at the orchestrator's LLM boundary (the fake gRPC services it calls are ``tests/support/fake_services``)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

from services.providers.base import (
    GenerationRequest,
    GenerationResult,
    ProviderError,
    StreamEvent,
    TextBlock,
    ToolUseBlock,
    Usage,
)
from tests.support.embedders import HashEmbedder


class ScriptedProvider:
    """A provider whose replies are scripted: a ProviderError to raise, or a result to return."""

    def __init__(self, name: str, model: str = "gpt-4o-mini", context_window: int = 128_000) -> None:
        self.name = name
        self.model = model
        self.context_window = context_window
        self.script: list[ProviderError | GenerationResult | str] = []
        self.default: ProviderError | str = "ok"
        self.requests: list[GenerationRequest] = []
        self._ids = itertools.count()

    def fail(self, kind: str = "provider_down", retryable: bool = True) -> ProviderError:
        return ProviderError(self.name, f"{kind} (scripted)", retryable, kind, status_code=500)

    def text(self, text: str, usage: Usage = Usage(100, 20)) -> GenerationResult:
        return GenerationResult([TextBlock(text)], usage, self.name, self.model)

    def tool_call(self, name: str, arguments: dict) -> GenerationResult:
        block = ToolUseBlock(id=f"toolu_{next(self._ids)}", name=name, input=arguments)
        return GenerationResult([block], Usage(100, 20), self.name, self.model, stop_reason="tool_use")

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        self.requests.append(request)
        reply = self.script.pop(0) if self.script else self.default
        if isinstance(reply, ProviderError):
            raise reply
        if isinstance(reply, str):
            return self.text(reply)
        return reply

    async def stream(self, request: GenerationRequest) -> AsyncIterator[StreamEvent]:
        result = await self.generate(request)
        yield StreamEvent(final=result)


def HashingEncoder() -> HashEmbedder:
    """A cheap stand-in for MiniLM in tests that do not exercise classification itself (64 buckets)."""
    return HashEmbedder(dimension=64)
