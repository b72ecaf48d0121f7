"""The one interface every LLM provider implements (Anthropic tool-use shape as the common model).

Callers build a ``GenerationRequest`` and get a ``GenerationResult`` (or a stream of
``StreamEvent``); every result carries usage and cost. Provider failures raise
``ProviderError`` with ``retryable`` set, which the orchestrator's circuit breakers use.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["user", "assistant"]


@dataclass(frozen=True)
class TextBlock:
    text: str
    type: Literal["text"] = "text"
    cacheable: bool = False
    """Mark as a prompt-cache breakpoint (system prompt, document context)."""


@dataclass(frozen=True)
class ToolUseBlock:
    id: str
    name: str
    input: Mapping[str, Any]
    type: Literal["tool_use"] = "tool_use"


@dataclass(frozen=True)
class ToolResultBlock:
    tool_use_id: str
    content: str
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"


ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock


@dataclass(frozen=True)
class Message:
    role: Role
    content: Sequence[ContentBlock] | str

    def blocks(self) -> list[ContentBlock]:
        return [TextBlock(self.content)] if isinstance(self.content, str) else list(self.content)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True)
class GenerationRequest:
    messages: Sequence[Message]
    system: Sequence[TextBlock] | str = ""
    tools: Sequence[ToolSpec] = ()
    json_schema: Mapping[str, Any] | None = None
    """When set, the output must be JSON valid against this schema."""
    temperature: float = 0.3
    max_tokens: int = 1024
    timeout_s: float | None = None
    """Deadline for the whole call (cancellation); None means the provider default."""
    model: str | None = None
    """Override of the provider's configured model."""


@dataclass(frozen=True)
class Usage:
    """Tokens of one call, in Anthropic's accounting, and what they cost.

    ``input_tokens`` are the input tokens billed at the full input price, i.e. NOT read from
    or written to the prompt cache; the total prompt is ``input_tokens + cache_read_tokens +
    cache_write_tokens`` (``prompt_tokens`` below). Vendors that report the total prompt
    (OpenAI ``prompt_tokens``, Gemini ``prompt_token_count``) are mapped onto this by
    subtracting their cached count.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cost_usd + other.cost_usd,
        )

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass(frozen=True)
class GenerationResult:
    content: Sequence[ContentBlock]
    usage: Usage
    provider: str
    model: str
    stop_reason: str = "end_turn"
    context_window: int = 0

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_calls(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]


@dataclass(frozen=True)
class StreamEvent:
    """A text delta, a completed tool call, or the final result (exactly one is set)."""

    text_delta: str = ""
    tool_use: ToolUseBlock | None = None
    final: GenerationResult | None = None


@dataclass
class ProviderError(Exception):
    provider: str
    message: str
    retryable: bool
    kind: str = "unknown"
    """rate_limited, provider_down, timeout, context_overflow, bad_response, auth, invalid_request, unknown."""
    retry_after_s: float | None = None
    status_code: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(f"{self.provider}: {self.message}")


@runtime_checkable
class Provider(Protocol):
    name: str
    model: str
    context_window: int

    async def generate(self, request: GenerationRequest) -> GenerationResult: ...

    def stream(self, request: GenerationRequest) -> AsyncGenerator[StreamEvent, None]: ...
