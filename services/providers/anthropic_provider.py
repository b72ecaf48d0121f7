"""Anthropic Messages API through the official ``anthropic`` SDK (AsyncAnthropic).

- Prompt cache: ``cache_control: ephemeral`` on every cacheable block (the system prompt and
  document context), at most the last 4 (the API's breakpoint limit).
- JSON-schema output: a forced tool whose input schema is the requested schema. Every Claude
  model supports it (native structured outputs do not exist on the seed's sonnet-4).
- Temperature: SDK 1.0 dropped the typed sampling parameters and models after Opus 4.6 reject
  them (400), while the seed's sonnet-4 still honours them. It goes in ``extra_body`` for the
  model families known to accept it, and is left out (API default) for the others.
- ``max_retries=0``: retries and failover live in one layer only, the router.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import anthropic

from services.providers.base import (
    ContentBlock,
    GenerationRequest,
    GenerationResult,
    Message,
    ProviderError,
    StreamEvent,
    TextBlock,
    ToolUseBlock,
    Usage,
)
from services.providers.deadlines import Deadline
from services.providers.errors import (
    bad_response,
    classify_status,
    connection_error,
    retry_after_from_headers,
    timeout_error,
)
from services.providers.hosted import HostedProvider
from services.providers.json_output import object_schema, unwrap

NAME = "anthropic"
JSON_TOOL = "emit_json"
MAX_CACHE_BREAKPOINTS = 4
_EPHEMERAL = {"type": "ephemeral"}
_SAMPLING_MODELS = re.compile(r"claude-3|claude-(sonnet|opus|haiku)-4(-[0-6])?(-\d{8})?$")


class AnthropicProvider(HostedProvider):
    name = NAME
    _client: anthropic.AsyncAnthropic

    def _connect(self, api_key: str, base_url: str | None, timeout_s: float) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        deadline = Deadline(NAME, request.timeout_s)
        params = self._params(request)
        try:
            message = await deadline.run(self._client.messages.create(**params))
            return self._result(message, request)
        except Exception as exc:
            raise _classify(exc) from exc

    async def stream(self, request: GenerationRequest) -> AsyncGenerator[StreamEvent, None]:
        deadline = Deadline(NAME, request.timeout_s)
        params = self._params(request)
        try:
            async with self._client.messages.stream(**params) as events:
                async for event in deadline.iterate(events):
                    if event.type == "text":
                        yield StreamEvent(text_delta=event.text)
                    elif event.type == "input_json" and request.json_schema is not None:
                        yield StreamEvent(text_delta=event.partial_json)
                    elif event.type == "content_block_stop" and event.content_block.type == "tool_use":
                        if request.json_schema is None:
                            yield StreamEvent(tool_use=_tool_use(event.content_block))
                message = await deadline.run(events.get_final_message())
            yield StreamEvent(final=self._result(message, request))
        except Exception as exc:
            raise _classify(exc) from exc

    def _params(self, request: GenerationRequest) -> dict[str, Any]:
        model = request.model or self.model
        system = _system_blocks(request.system)
        messages = [_message(m) for m in request.messages]
        _limit_breakpoints([*system, *(b for m in messages for b in m["content"])])
        params: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens, "messages": messages}
        if accepts_temperature(model):
            params["extra_body"] = {"temperature": request.temperature}
        if system:
            params["system"] = system
        if request.timeout_s is not None:
            params["timeout"] = request.timeout_s
        if request.json_schema is not None:
            schema = object_schema(request.json_schema)
            params["tools"] = [{"name": JSON_TOOL, "description": "Return the answer.", "input_schema": schema}]
            params["tool_choice"] = {"type": "tool", "name": JSON_TOOL}
        elif request.tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
                for t in request.tools
            ]
        return params

    def _result(self, message: Any, request: GenerationRequest) -> GenerationResult:
        content: list[ContentBlock] = []
        for block in message.content:
            if block.type == "text":
                content.append(TextBlock(block.text))
            elif block.type == "tool_use":
                if request.json_schema is not None and block.name == JSON_TOOL:
                    content.append(TextBlock(json.dumps(unwrap(request.json_schema, block.input))))
                else:
                    content.append(_tool_use(block))
        usage = message.usage
        mapped = Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
        )
        stop = message.stop_reason or "end_turn"
        if request.json_schema is not None and stop == "tool_use":
            stop = "end_turn"
        return GenerationResult(
            content=content,
            usage=self._prices.with_cost(message.model or self.model, mapped),
            provider=NAME,
            model=message.model or self.model,
            stop_reason=stop,
            context_window=self._prices.context_window(message.model or self.model),
        )


def accepts_temperature(model: str) -> bool:
    return bool(_SAMPLING_MODELS.match(model))


def _tool_use(block: Any) -> ToolUseBlock:
    if not isinstance(block.input, dict):
        raise bad_response(NAME, f"tool_use input is not an object: {block.input!r}")
    return ToolUseBlock(id=block.id, name=block.name, input=block.input)


def _text(block: TextBlock) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "text", "text": block.text}
    if block.cacheable:
        out["cache_control"] = _EPHEMERAL
    return out


def _system_blocks(system: Sequence[TextBlock] | str) -> list[dict[str, Any]]:
    if isinstance(system, str):
        # A plain system prompt is reused verbatim across calls: worth a breakpoint.
        return [_text(TextBlock(system, cacheable=True))] if system else []
    return [_text(b) for b in system]


def _message(message: Message) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    for block in message.blocks():
        if isinstance(block, TextBlock):
            blocks.append(_text(block))
        elif isinstance(block, ToolUseBlock):
            blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)})
        else:
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": block.tool_use_id,
                    "content": block.content,
                    "is_error": block.is_error,
                }
            )
    return {"role": message.role, "content": blocks}


def _limit_breakpoints(blocks: list[dict[str, Any]]) -> None:
    # Keep the last ones: a later breakpoint caches everything before it too.
    marked = [b for b in blocks if "cache_control" in b]
    for block in marked[: max(0, len(marked) - MAX_CACHE_BREAKPOINTS)]:
        del block["cache_control"]


def _classify(exc: BaseException) -> ProviderError:
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, anthropic.APITimeoutError):
        return timeout_error(NAME)
    if isinstance(exc, anthropic.APIConnectionError):
        return connection_error(NAME, str(exc))
    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        nested = body.get("error")
        error = nested if isinstance(nested, dict) else {}
        return classify_status(
            NAME,
            exc.status_code,
            str(error.get("message") or exc.message),
            retry_after_s=retry_after_from_headers(exc.response.headers),
            code=error.get("type"),
        )
    return bad_response(NAME, f"{type(exc).__name__}: {exc}")
