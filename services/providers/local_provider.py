"""The offline provider: the local SmolLM2 model behind the common provider interface.

It is small and weak: good for free-form rewriting, poor at facts, useless at translation
(the router only gives it free-form tasks). Tool use and JSON output are grammar-constrained
by llama.cpp (``response_format`` ``json_schema``), so the output always parses; the choice
it makes may still be poor, which is acknowledged.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from typing import Any

from services.providers.base import (
    ContentBlock,
    GenerationRequest,
    GenerationResult,
    ProviderError,
    StreamEvent,
    TextBlock,
    ToolUseBlock,
    Usage,
)
from services.providers.deadlines import Deadline
from services.providers.errors import bad_response, classify_status, timeout_error
from services.providers.local_model import (
    MODEL_NAME,
    LocalModel,
    LocalModelConfig,
    LocalModelError,
    get_local_model,
)
from services.providers.local_tools import chat_messages, parse_tool_choice, tool_choice_schema

NAME = "local"
_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens"}


class LocalProvider:
    name = NAME
    model = MODEL_NAME

    def __init__(
        self,
        config: LocalModelConfig = LocalModelConfig(),
        *,
        loader: Callable[[LocalModelConfig], LocalModel] = get_local_model,
    ) -> None:
        self._config = config
        self._loader = loader
        self.context_window = config.n_ctx

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        final = None
        async for event in self.stream(request):
            final = event.final or final
        assert final is not None
        return final

    async def stream(self, request: GenerationRequest) -> AsyncGenerator[StreamEvent, None]:
        deadline = Deadline(NAME, request.timeout_s)
        body = self._body(request)
        text: list[str] = []
        usage: Mapping[str, Any] | None = None
        finish: str | None = None
        # With tools the output is a JSON envelope: nothing to stream until it is parsed.
        stream_text = not request.tools
        async with aclosing(self._chunks(body, deadline)) as chunks:
            async for chunk in chunks:
                usage = chunk.get("usage") or usage
                for choice in chunk.get("choices") or ():
                    finish = choice.get("finish_reason") or finish
                    delta = (choice.get("delta") or {}).get("content")
                    if delta:
                        text.append(delta)
                        if stream_text:
                            yield StreamEvent(text_delta=delta)
        if usage is None:
            raise bad_response(NAME, "the local model returned no usage")
        output = "".join(text)
        content: list[ContentBlock]
        if request.tools:
            choice = parse_tool_choice(output, request.tools)
            content = [choice]
            if isinstance(choice, ToolUseBlock):
                finish = "tool_calls"
                yield StreamEvent(tool_use=choice)
            elif isinstance(choice, TextBlock):
                yield StreamEvent(text_delta=choice.text)
        else:
            content = [TextBlock(output)] if output else []
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        mapped = Usage(
            input_tokens=int(usage.get("prompt_tokens", 0)) - cached,
            output_tokens=int(usage.get("completion_tokens", 0)),
            cache_read_tokens=cached,
        )
        yield StreamEvent(
            final=GenerationResult(
                content=content,
                usage=mapped,
                provider=NAME,
                model=MODEL_NAME,
                stop_reason="tool_use" if finish == "tool_calls" else _STOP_REASONS.get(finish or "stop", "end_turn"),
                context_window=self.context_window,
            )
        )

    def _body(self, request: GenerationRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "messages": chat_messages(request),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        schema = tool_choice_schema(request.tools, request.json_schema) if request.tools else request.json_schema
        if schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "output", "schema": dict(schema)}}
        return body

    async def _chunks(self, body: Mapping[str, Any], deadline: Deadline) -> AsyncGenerator[Mapping[str, Any], None]:
        """Runs one call in a worker thread and relays its chunks; closing the iterator stops it."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = threading.Event()

        def post(kind: str, item: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, item))
            except RuntimeError:  # the loop is gone: nobody is listening any more
                stop.set()

        def on_chunk(chunk: Mapping[str, Any]) -> bool:
            post("chunk", chunk)
            return stop.is_set()

        def work() -> None:
            try:
                model = self._loader(self._config)
                model.chat(body, on_chunk, lock_timeout_s=deadline.remaining(), cancelled=stop.is_set)
            except BaseException as exc:  # noqa: BLE001 - relayed to the awaiting coroutine
                post("error", exc)
            else:
                post("done", None)

        # The worker never raises (it posts its error), so its future needs no awaiting.
        loop.run_in_executor(None, work)
        try:
            while True:
                kind, item = await deadline.run(queue.get())
                if kind == "done":
                    return
                if kind == "error":
                    raise _classify(item)
                yield item
        finally:
            stop.set()  # a running generation ends at its next token


def _classify(exc: BaseException) -> ProviderError:
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, TimeoutError):
        return timeout_error(NAME, str(exc))
    if isinstance(exc, LocalModelError):
        return classify_status(NAME, exc.status, str(exc), code=str(exc.body.get("type") or ""))
    # A missing or corrupted model file: the model is down; the next provider may still answer.
    return ProviderError(NAME, f"{type(exc).__name__}: {exc}", True, "provider_down")
