"""OpenAI Chat Completions through the official ``openai`` SDK (AsyncOpenAI).

``base_url`` makes any OpenAI-compatible server work (vLLM, Ollama, llama.cpp server).
- Prompt cache: OpenAI caches prompt prefixes automatically; ``usage.prompt_tokens_details
  .cached_tokens`` is reported as cache reads (and subtracted from billed input).
- JSON-schema output: ``response_format`` ``json_schema`` (non-strict: arbitrary schemas are
  allowed; the router validates the result).
- Streaming asks for ``stream_options.include_usage`` so usage arrives in a last chunk.
- ``max_retries=0``: retries and failover live in one layer only, the router.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

import openai

from services.providers.base import (
    ContentBlock,
    GenerationRequest,
    GenerationResult,
    ProviderError,
    StreamEvent,
    TextBlock,
    ToolResultBlock,
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

NAME = "openai"
_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use"}


class OpenAIProvider(HostedProvider):
    name = NAME
    _client: openai.AsyncOpenAI

    def _connect(self, api_key: str, base_url: str | None, timeout_s: float) -> openai.AsyncOpenAI:
        # OpenAI itself wants max_completion_tokens; compatible servers mostly know max_tokens only.
        official = base_url is None or "api.openai.com" in base_url
        self.max_tokens_field = "max_completion_tokens" if official else "max_tokens"
        return openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        deadline = Deadline(NAME, request.timeout_s)
        try:
            completion = await deadline.run(self._client.chat.completions.create(**self._params(request)))
            if not getattr(completion, "choices", None):
                raise bad_response(NAME, "no choices in the completion")
            choice = completion.choices[0]
            content: list[ContentBlock] = []
            if choice.message.content:
                content.append(TextBlock(choice.message.content))
            for call in choice.message.tool_calls or ():
                content.append(_tool_use(call.id, call.function.name, call.function.arguments))
            return self._result(content, completion.usage, completion.model, choice.finish_reason)
        except Exception as exc:
            raise _classify(exc) from exc

    async def stream(self, request: GenerationRequest) -> AsyncGenerator[StreamEvent, None]:
        deadline = Deadline(NAME, request.timeout_s)
        params = self._params(request) | {"stream": True, "stream_options": {"include_usage": True}}
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage = None
        model = request.model or self.model
        finish: str | None = None
        try:
            chunks = await deadline.run(self._client.chat.completions.create(**params))
            async with chunks:
                async for chunk in deadline.iterate(chunks):
                    model = chunk.model or model
                    if chunk.usage is not None:
                        usage = chunk.usage
                    for choice in chunk.choices or ():
                        finish = choice.finish_reason or finish
                        delta = choice.delta
                        if delta is None:
                            continue
                        if delta.content:
                            text.append(delta.content)
                            yield StreamEvent(text_delta=delta.content)
                        for part in delta.tool_calls or ():
                            call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                            call["id"] = part.id or call["id"]
                            if part.function is not None:
                                call["name"] += part.function.name or ""
                                call["arguments"] += part.function.arguments or ""
            content: list[ContentBlock] = [TextBlock("".join(text))] if text else []
            for index in sorted(calls):
                block = _tool_use(calls[index]["id"], calls[index]["name"], calls[index]["arguments"])
                content.append(block)
                yield StreamEvent(tool_use=block)
            if usage is None:
                raise bad_response(NAME, "the stream ended without a usage chunk")
            yield StreamEvent(final=self._result(content, usage, model, finish))
        except Exception as exc:
            raise _classify(exc) from exc

    def _params(self, request: GenerationRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": _messages(request),
            "temperature": request.temperature,
            self.max_tokens_field: request.max_tokens,
        }
        if request.timeout_s is not None:
            params["timeout"] = request.timeout_s
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": dict(t.input_schema)},
                }
                for t in request.tools
            ]
        if request.json_schema is not None:
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": dict(request.json_schema), "strict": False},
            }
        return params

    def _result(
        self, content: list[ContentBlock], usage: Any, model: str | None, finish: str | None
    ) -> GenerationResult:
        if usage is None:
            raise bad_response(NAME, "no usage in the completion")
        details = getattr(usage, "prompt_tokens_details", None)
        cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
        mapped = Usage(
            input_tokens=usage.prompt_tokens - cached,
            output_tokens=usage.completion_tokens,
            cache_read_tokens=cached,
        )
        model = model or self.model
        return GenerationResult(
            content=content,
            usage=self._prices.with_cost(model, mapped),
            provider=NAME,
            model=model,
            stop_reason=_STOP_REASONS.get(finish or "stop", finish or "end_turn"),
            context_window=self._prices.context_window(model),
        )


def _tool_use(call_id: str | None, name: str, arguments: str | None) -> ToolUseBlock:
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        raise bad_response(NAME, f"tool call {name!r} arguments are not JSON: {exc}") from exc
    if not isinstance(parsed, dict) or not name:
        raise bad_response(NAME, f"tool call {name!r} is malformed")
    return ToolUseBlock(id=call_id or f"call_{name}", name=name, input=parsed)


def _messages(request: GenerationRequest) -> list[dict[str, Any]]:
    system = request.system if isinstance(request.system, str) else "\n\n".join(b.text for b in request.system)
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in request.messages:
        blocks = message.blocks()
        texts = [b.text for b in blocks if isinstance(b, TextBlock)]
        calls = [b for b in blocks if isinstance(b, ToolUseBlock)]
        # Tool results are messages of their own, and must directly follow the call.
        for result in (b for b in blocks if isinstance(b, ToolResultBlock)):
            content = f"ERROR: {result.content}" if result.is_error else result.content
            out.append({"role": "tool", "tool_call_id": result.tool_use_id, "content": content})
        if message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) or None}
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(dict(c.input))},
                    }
                    for c in calls
                ]
            out.append(entry)
        elif texts:
            out.append({"role": "user", "content": "\n\n".join(texts)})
    return out


def _classify(exc: BaseException) -> ProviderError:
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, openai.APITimeoutError):
        return timeout_error(NAME)
    if isinstance(exc, openai.APIConnectionError):
        return connection_error(NAME, str(exc))
    if isinstance(exc, openai.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        nested = body.get("error")
        error = nested if isinstance(nested, dict) else body
        return classify_status(
            NAME,
            exc.status_code,
            str(error.get("message") or exc.message),
            retry_after_s=retry_after_from_headers(exc.response.headers),
            code=str(error.get("code") or error.get("type") or ""),
        )
    return bad_response(NAME, f"{type(exc).__name__}: {exc}")
