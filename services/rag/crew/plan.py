"""What the runner hands the crew's worker thread, and what comes back (no CrewAI imports)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from services.providers.base import GenerationResult
from services.providers.router import Router
from services.rag.crew.roles import Role
from services.rag.crew.scope import ToolScope


@dataclass(frozen=True)
class Member:
    role: Role
    description: str
    """The task prompt, evidence included."""
    router: Router
    """Failover order with the agent's preferred provider first."""
    bind_tools: bool
    """False when the first provider is the local model, which cannot drive CrewAI's tool protocol."""


@dataclass(frozen=True)
class CrewPlan:
    members: tuple[Member, ...]
    scope: ToolScope
    loop: asyncio.AbstractEventLoop
    max_iter: int
    max_tokens: int
    temperature: float


@dataclass(frozen=True)
class AgentRun:
    role: Role
    raw: str
    results: tuple[GenerationResult, ...]
    """Every LLM answer the agent got, in order (the last one is its final answer)."""
