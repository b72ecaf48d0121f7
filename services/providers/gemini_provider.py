"""Gemini through the official ``google-genai`` SDK (``client.aio``).

- ``base_url`` goes in ``HttpOptions`` (tests point it at a local server); the API version is
  pinned to ``v1beta``, where JSON-schema function parameters and response schemas live.
- Tools are function declarations with a JSON-schema ``parameters_json_schema``; automatic
  function calling is off (we return calls to the caller, we never run Python callables).
- JSON-schema output: ``response_mime_type=application/json`` + ``response_json_schema``.
- Prompt cache: Gemini caches implicitly; ``cached_content_token_count`` is reported as cache
  reads (and subtracted from billed input, which Gemini reports inclusive of it).
- ``HttpRetryOptions(attempts=1)``: no SDK retries (also disables its implicit connection-error
  retry with a 1-10 s sleep); retries and failover live in one layer only, the router.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from google import genai
from google.genai import errors as genai_errors
from google.genai import types

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
)
from services.providers.hosted import HostedProvider

NAME = "gemini"
API_VERSION = "v1beta"
_DURATION = re.compile(r"^([0-9.]+)s$")


class GeminiProvider(HostedProvider):
    name = NAME
    _client: genai.Client

    def _connect(self, api_key: str, base_url: str | None, timeout_s: float) -> genai.Client:
        options = types.HttpOptions(
            base_url=base_url,
            api_version=API_VERSION,
            timeout=int(timeout_s * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        return genai.Client(api_key=api_key, http_options=options)

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        deadline = Deadline(NAME, request.timeout_s)
        model = request.model or self.model
        try:
            response = await deadline.run(
                self._client.aio.models.generate_content(
                    model=model, contents=_contents(request), config=self._config(request)
                )
            )
            content = _blocks(response)
            return self._result(content, response.usage_metadata, response, model)
        except Exception as exc:
            raise _classify(exc) from exc

    async def stream(self, request: GenerationRequest) -> AsyncGenerator[StreamEvent, None]:
        deadline = Deadline(NAME, request.timeout_s)
        model = request.model or self.model
        content: list[ContentBlock] = []
        text: list[str] = []
        usage = None
        last = None
        try:
            chunks = await deadline.run(
                self._client.aio.models.generate_content_stream(
                    model=model, contents=_contents(request), config=self._config(request)
                )
            )
            async with aclosing(chunks):  # type: ignore[type-var]  # google-genai types its async generator as an iterator
                async for chunk in deadline.iterate(chunks):
                    last = chunk
                    usage = chunk.usage_metadata or usage
                    for block in _blocks(chunk, allow_empty=True):
                        if isinstance(block, TextBlock):
                            text.append(block.text)
                            yield StreamEvent(text_delta=block.text)
                        elif isinstance(block, ToolUseBlock):  # Gemini sends no tool results
                            content.append(block)
                            yield StreamEvent(tool_use=block)
            if last is None:
                raise bad_response(NAME, "empty stream")
            blocks: list[ContentBlock] = [TextBlock("".join(text))] if text else []
            yield StreamEvent(final=self._result(blocks + content, usage, last, model))
        except Exception as exc:
            raise _classify(exc) from exc

    def _config(self, request: GenerationRequest) -> types.GenerateContentConfig:
        system = request.system if isinstance(request.system, str) else "\n\n".join(b.text for b in request.system)
        config: dict[str, Any] = {
            "temperature": request.temperature,
            "max_output_tokens": request.max_tokens,
            "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True),
        }
        if system:
            config["system_instruction"] = system
        if request.timeout_s is not None:
            config["http_options"] = types.HttpOptions(
                timeout=int(request.timeout_s * 1000), retry_options=types.HttpRetryOptions(attempts=1)
            )
        if request.tools:
            config["tools"] = [
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(
                            name=t.name, description=t.description, parameters_json_schema=dict(t.input_schema)
                        )
                        for t in request.tools
                    ]
                )
            ]
        if request.json_schema is not None:
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = dict(request.json_schema)
        return types.GenerateContentConfig(**config)

    def _result(self, content: list[ContentBlock], usage: Any, response: Any, model: str) -> GenerationResult:
        if usage is None or usage.prompt_token_count is None:
            raise bad_response(NAME, "no usageMetadata in the response")
        cached = usage.cached_content_token_count or 0
        mapped = Usage(
            input_tokens=usage.prompt_token_count - cached,
            # Thinking tokens are billed as output.
            output_tokens=(usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0),
            cache_read_tokens=cached,
        )
        model = response.model_version or model
        finish = response.candidates[0].finish_reason if response.candidates else None
        if any(isinstance(b, ToolUseBlock) for b in content):
            stop = "tool_use"
        elif finish == types.FinishReason.MAX_TOKENS:
            stop = "max_tokens"
        elif finish in (None, types.FinishReason.STOP):
            stop = "end_turn"
        else:
            stop = str(finish.value if hasattr(finish, "value") else finish).lower()
        return GenerationResult(
            content=content,
            usage=self._prices.with_cost(model, mapped),
            provider=NAME,
            model=model,
            stop_reason=stop,
            context_window=self._prices.context_window(model),
        )


def _blocks(response: Any, *, allow_empty: bool = False) -> list[ContentBlock]:
    if not response.candidates:
        if allow_empty:
            return []
        raise bad_response(NAME, "no candidates in the response")
    content = response.candidates[0].content
    blocks: list[ContentBlock] = []
    for part in (content.parts if content and content.parts else ()):
        if part.function_call is not None:
            call = part.function_call
            if not call.name:
                raise bad_response(NAME, "function call without a name")
            call_id = call.id or f"call_{uuid.uuid4().hex[:12]}"
            blocks.append(ToolUseBlock(id=call_id, name=call.name, input=dict(call.args or {})))
        elif part.text and not part.thought:
            blocks.append(TextBlock(part.text))
    return blocks


def _contents(request: GenerationRequest) -> list[types.Content]:
    # Gemini answers a function call by name, our ToolResultBlock by id: remember the names.
    names = {b.id: b.name for m in request.messages for b in m.blocks() if isinstance(b, ToolUseBlock)}
    contents = []
    for message in request.messages:
        parts = []
        for block in message.blocks():
            if isinstance(block, TextBlock):
                parts.append(types.Part(text=block.text))
            elif isinstance(block, ToolUseBlock):
                parts.append(
                    types.Part(function_call=types.FunctionCall(id=block.id, name=block.name, args=dict(block.input)))
                )
            elif isinstance(block, ToolResultBlock):
                key = "error" if block.is_error else "result"
                parts.append(
                    types.Part(
                        function_response=types.FunctionResponse(
                            id=block.tool_use_id,
                            name=names.get(block.tool_use_id, "tool"),
                            response={key: block.content},
                        )
                    )
                )
        contents.append(types.Content(role="model" if message.role == "assistant" else "user", parts=parts))
    return contents


def _retry_delay(details: Any) -> float | None:
    """``google.rpc.RetryInfo.retryDelay`` ("30s") from an error body."""
    error = details.get("error") if isinstance(details, dict) else None
    for detail in (error or {}).get("details") or ():
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


def _classify(exc: BaseException) -> ProviderError:
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, genai_errors.APIError):
        headers = getattr(getattr(exc, "response", None), "headers", None)
        retry_after = retry_after_from_headers(dict(headers) if headers else None) or _retry_delay(exc.details)
        message = str(exc.message or exc)
        return classify_status(NAME, int(exc.code or 0), message, retry_after_s=retry_after, code=exc.status)
    if isinstance(exc, OSError) or type(exc).__module__.split(".")[0] in ("aiohttp", "httpx", "httpx2"):
        return connection_error(NAME, f"{type(exc).__name__}: {exc}")
    return bad_response(NAME, f"{type(exc).__name__}: {exc}")
