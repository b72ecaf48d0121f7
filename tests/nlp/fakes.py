"""Test doubles at the NLP service's LLM provider boundary (the fake RAG service is ``tests/support/fake_services``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from services.providers.base import GenerationRequest, GenerationResult, TextBlock, Usage
from services.runtime.errors import FailedPrecondition


@dataclass
class ScriptedGenerator:
    """Answers each task with ``reply(task, request)``; records every call."""

    reply: Callable[[str, GenerationRequest], str]
    provider: str = "fake"
    model: str = "scripted-1"
    usage: Usage = field(default_factory=Usage)
    """What every call reports it cost."""
    calls: list[tuple[str, GenerationRequest]] = field(default_factory=list)

    async def generate(self, task: str, request: GenerationRequest) -> GenerationResult:
        self.calls.append((task, request))
        return GenerationResult([TextBlock(self.reply(task, request))], self.usage, self.provider, self.model)


class NoProviders:
    """Behaves like the router with nothing configured for any task."""

    async def generate(self, task: str, request: GenerationRequest) -> GenerationResult:
        raise FailedPrecondition(
            f"no LLM provider can serve task {task!r}: set ANTHROPIC_API_KEY to enable a provider",
            reason="NO_PROVIDER_AVAILABLE",
        )
