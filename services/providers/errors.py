"""How provider failures are classified, and how they surface as domain errors.

Adapters turn every SDK exception into a ``ProviderError`` with ``classify_status`` so that
the router (failover) and the orchestrator (circuit breakers) see one vocabulary. The router
turns what finally escapes into a ``DomainError`` so that RPCs fail with the right status.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping, Sequence

from services.providers.base import ProviderError
from services.runtime.errors import (
    DeadlineExceeded,
    DomainError,
    FailedPrecondition,
    InvalidArgument,
    ResourceExhausted,
    Unavailable,
)

# Vendors word it differently: "prompt is too long: 210000 tokens > 200000 maximum" (Anthropic),
# "context_length_exceeded" (OpenAI), "input token count ... exceeds the maximum" (Gemini),
# "exceeds the available context size" (llama.cpp).
_CONTEXT_OVERFLOW = re.compile(r"context|too long|token count|maximum.*tokens|tokens.*maximum", re.IGNORECASE)


class NoProviderAvailable(FailedPrecondition):
    """No configured provider can serve the task (e.g. translation with no API key set)."""


def classify_status(
    provider: str,
    status: int,
    message: str,
    *,
    retry_after_s: float | None = None,
    code: str | None = None,
) -> ProviderError:
    """The ``ProviderError`` for an HTTP error status returned by a vendor API."""
    text = f"{code or ''} {message}"
    if status == 429:
        return ProviderError(provider, message, True, "rate_limited", retry_after_s, status)
    if status in (408, 504):
        return ProviderError(provider, message, True, "timeout", retry_after_s, status)
    if status >= 500:
        # 529 is Anthropic's "overloaded": as transient as a 503.
        return ProviderError(provider, message, True, "provider_down", retry_after_s, status)
    if status in (401, 403):
        return ProviderError(provider, message, False, "auth", None, status)
    if status == 413 or (status in (400, 422) and _CONTEXT_OVERFLOW.search(text)):
        return ProviderError(provider, message, False, "context_overflow", None, status)
    return ProviderError(provider, message, False, "invalid_request", None, status)


def timeout_error(provider: str, message: str = "request timed out") -> ProviderError:
    return ProviderError(provider, message, True, "timeout")


def connection_error(provider: str, message: str) -> ProviderError:
    return ProviderError(provider, f"connection failed: {message}", True, "provider_down")


def bad_response(provider: str, message: str) -> ProviderError:
    # Retryable: a garbled body says nothing about whether the next provider can answer.
    return ProviderError(provider, f"malformed response: {message}", True, "bad_response")


def retry_after_from_headers(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    if (ms := lowered.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - time.time())


def to_domain_error(task: str, errors: Sequence[ProviderError]) -> DomainError:
    """The RPC-facing error once every provider for ``task`` has been tried."""
    last = errors[-1]
    tried = ",".join(e.provider for e in errors)
    metadata = {"task": task, "providers": tried, "kind": last.kind}
    waits = [e.retry_after_s for e in errors if e.retry_after_s is not None]
    if waits:
        metadata["retry_after_s"] = f"{min(waits):g}"  # the soonest any provider may answer again
    summary = "; ".join(f"{e.provider}: {e.kind}" for e in errors)
    message = f"task {task!r} failed on every provider tried ({summary}): {last.message}"
    error: DomainError
    if last.kind == "context_overflow":
        error = InvalidArgument(message, reason="CONTEXT_OVERFLOW", metadata=metadata)
    elif last.kind == "auth":
        error = FailedPrecondition(message, reason="PROVIDER_AUTH", metadata=metadata)
    elif last.kind == "invalid_request":
        error = InvalidArgument(message, reason="PROVIDER_REJECTED", metadata=metadata)
    elif last.kind == "rate_limited" and all(e.kind == "rate_limited" for e in errors):
        error = ResourceExhausted(message, reason="PROVIDER_RATE_LIMITED", metadata=metadata)
    elif last.kind == "timeout" and all(e.kind == "timeout" for e in errors):
        error = DeadlineExceeded(message, reason="PROVIDER_TIMEOUT", metadata=metadata)
    else:
        error = Unavailable(message, reason="PROVIDER_UNAVAILABLE", metadata=metadata)
    error.provider_errors = tuple(errors)  # type: ignore[union-attr]
    return error
