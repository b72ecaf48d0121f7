"""The LLM provider layer: one interface, four providers, and a router with failover.

Each service binding builds one ``Router`` (``Router.from_settings``) and hands it to what needs a
model; callers name a task: ``await router.generate("rewrite", request)``.
"""

from services.providers.base import (
    ContentBlock,
    GenerationRequest,
    GenerationResult,
    Message,
    Provider,
    ProviderError,
    StreamEvent,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    Usage,
)
from services.providers.call_stats import CallRecord, ProviderStats
from services.providers.errors import NoProviderAvailable
from services.providers.registry import FREE_FORM_TASKS
from services.providers.router import Router

__all__ = [
    "FREE_FORM_TASKS",
    "CallRecord",
    "ContentBlock",
    "GenerationRequest",
    "GenerationResult",
    "Message",
    "NoProviderAvailable",
    "Provider",
    "ProviderError",
    "ProviderStats",
    "Router",
    "StreamEvent",
    "TextBlock",
    "ToolResultBlock",
    "ToolSpec",
    "ToolUseBlock",
    "Usage",
]
