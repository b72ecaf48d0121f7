"""A CrewAI LLM that delegates to the router: a crew agent gets failover, usage, cost and the
offline local model like every other caller.

    llm = RouterLLM(task="crew")             # inside async code: remembers the running loop
    agent = Agent(role=..., llm=llm, max_retry_limit=0)
    await asyncio.to_thread(crew.kickoff)    # CrewAI is synchronous: keep it off the loop

CrewAI calls ``call`` synchronously from its own thread; the router is async and its SDK
clients belong to one event loop, so the call is submitted to the loop the LLM was created
on (with the caller's request context: tenant, request id, deadline). Without such a loop
(scripts, tests) it runs on a private one.

Retries stay in the router: CrewAI wraps ``call`` in its own rate-limit retry, which looks for
429s and "rate limit" anywhere in the exception chain, so a failure leaves as
``LLMCallFailed`` with no chained cause (the domain error is on ``.failure``). Set the agents'
``max_retry_limit=0`` too: that is CrewAI's other retry loop.

CrewAI rejects an empty completion with a ValueError that ends the whole crew; a small model
sometimes stops at once (or says only what a stop word then cuts), so an empty answer is
returned as ``empty_answer`` instead, for the caller to recognise as no answer.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from crewai.events.types.llm_events import LLMCallType
from crewai.llms.base_llm import BaseLLM, llm_call_context
from pydantic import BaseModel, PrivateAttr

from services.providers.base import GenerationRequest, GenerationResult, Message, TextBlock
from services.providers.router import Router
from services.runtime import request_context
from services.runtime.errors import DomainError


class LLMCallFailed(RuntimeError):
    """The router could not answer; ``failure`` is the domain error to report over RPC."""

    def __init__(self, task: str, failure: DomainError) -> None:
        self.task = task
        self.failure = failure
        super().__init__(f"LLM call for task {task!r} failed: {failure.reason}")


class RouterLLM(BaseLLM):
    llm_type: str = "docuthinker-router"
    provider: str = "docuthinker"
    router_task: str = "crew"
    """The router task whose provider order (and local-model eligibility) applies."""
    max_tokens: int | float | None = 512
    timeout_s: float | None = None
    """Per-call deadline; the RPC's remaining deadline still applies when shorter."""
    empty_answer: str = "(no answer)"
    """What ``call`` returns for a completion with no text (CrewAI refuses an empty one)."""

    _router: Router = PrivateAttr()
    _loop: asyncio.AbstractEventLoop | None = PrivateAttr(default=None)
    _results: list[GenerationResult] = PrivateAttr(default_factory=list)

    def __init__(
        self,
        *,
        task: str = "crew",
        router: Router,
        loop: asyncio.AbstractEventLoop | None = None,
        **data: Any,
    ) -> None:
        data.setdefault("model", f"docuthinker/{task}")
        super().__init__(router_task=task, **data)  # type: ignore[call-arg]  # a pydantic extra field
        self._router = router
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        self._loop = loop

    @property
    def results(self) -> list[GenerationResult]:
        """Every answer so far, with the provider and model that produced it, and its usage."""
        return list(self._results)

    def supports_function_calling(self) -> bool:
        # CrewAI then drives tools with its text (ReAct) protocol, which every provider can follow.
        return False

    def supports_stop_words(self) -> bool:
        return self._supports_stop_words_implementation()

    def get_context_window_size(self) -> int:
        names = self._router.providers_for(self.router_task)
        return self._router.provider(names[0]).context_window if names else super().get_context_window_size()

    def call(
        self,
        messages: str | list[Any],
        tools: list[dict[str, Any]] | None = None,
        callbacks: list[Any] | None = None,
        available_functions: dict[str, Any] | None = None,
        from_task: Any | None = None,
        from_agent: Any | None = None,
        response_model: type[BaseModel] | None = None,
    ) -> str | Any:
        with llm_call_context():
            self._emit_call_started_event(
                messages=messages,
                tools=tools,
                callbacks=callbacks,
                available_functions=available_functions,
                from_task=from_task,
                from_agent=from_agent,
            )
            normalized = _normalize(messages)
            self._invoke_before_llm_call_hooks(normalized, from_agent)  # type: ignore[arg-type]  # LLMMessage is a TypedDict of str
            model = response_model or getattr(self, "response_format", None)
            request = self._request(normalized, model)
            failure: DomainError | None = None
            try:
                result = self._run(request)
            except DomainError as error:
                failure = error
            if failure is not None:
                # Raised outside the except block: no __context__ for CrewAI's retry to find.
                self._emit_call_failed_event(error=str(failure), from_task=from_task, from_agent=from_agent)
                raise LLMCallFailed(self.router_task, failure)
            return self._finish(result, normalized, from_task, from_agent, model)

    async def acall(
        self,
        messages: str | list[Any],
        tools: list[dict[str, Any]] | None = None,
        callbacks: list[Any] | None = None,
        available_functions: dict[str, Any] | None = None,
        from_task: Any | None = None,
        from_agent: Any | None = None,
        response_model: type[BaseModel] | None = None,
    ) -> str | Any:
        with llm_call_context():
            normalized = _normalize(messages)
            model = response_model or getattr(self, "response_format", None)
            failure: DomainError | None = None
            try:
                result = await self._router.generate(self.router_task, self._request(normalized, model))
            except DomainError as error:
                failure = error
            if failure is not None:
                raise LLMCallFailed(self.router_task, failure)
            return self._finish(result, normalized, from_task, from_agent, model)

    # -- internals ---------------------------------------------------------------------------

    def _request(self, messages: list[dict[str, str]], response_model: type[BaseModel] | None) -> GenerationRequest:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        turns = [
            Message("assistant" if m["role"] == "assistant" else "user", m["content"])
            for m in messages
            if m["role"] != "system"
        ]
        return GenerationRequest(
            messages=turns or [Message("user", "")],
            system=[TextBlock(system, cacheable=True)] if system else "",
            json_schema=response_model.model_json_schema() if response_model else None,
            temperature=self.temperature if self.temperature is not None else 0.3,
            max_tokens=int(self.max_tokens or 512),
            timeout_s=self.timeout_s,
        )

    def _finish(
        self,
        result: GenerationResult,
        messages: list[dict[str, str]],
        from_task: Any,
        from_agent: Any,
        response_model: type[BaseModel] | None,
    ) -> str | Any:
        self._results.append(result)
        u = result.usage
        usage = {
            "prompt_tokens": u.prompt_tokens,
            "completion_tokens": u.output_tokens,
            "total_tokens": u.prompt_tokens + u.output_tokens,
            "cached_prompt_tokens": u.cache_read_tokens,
            "cache_creation_tokens": u.cache_write_tokens,
        }
        self._track_token_usage_internal(usage)
        text = self._apply_stop_words(result.text)
        self._emit_call_completed_event(
            response=text, call_type=LLMCallType.LLM_CALL, from_task=from_task, from_agent=from_agent,
            messages=messages, usage=usage,  # type: ignore[arg-type]  # LLMMessage is a TypedDict of str
        )
        text = self._invoke_after_llm_call_hooks(messages, text, from_agent)  # type: ignore[arg-type]
        if not response_model and not text.strip():
            return self.empty_answer
        return self._validate_structured_output(text, response_model) if response_model else text

    def _run(self, request: GenerationRequest) -> GenerationResult:
        loop = self._loop if self._loop is not None and self._loop.is_running() else _private_loop()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            raise RuntimeError("RouterLLM.call blocks: run the crew in a worker thread (asyncio.to_thread)")
        call = _with_context(request_context.current(), self._router.generate(self.router_task, request))
        return asyncio.run_coroutine_threadsafe(call, loop).result()


async def _with_context(ctx: request_context.RequestContext | None, coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Runs ``coroutine`` with the calling thread's request context (tenant, deadline) bound."""
    if ctx is None:
        return await coroutine
    token = request_context.bind(ctx)
    try:
        return await coroutine
    finally:
        request_context.unbind(token)


_private: asyncio.AbstractEventLoop | None = None
_private_lock = threading.Lock()


def _private_loop() -> asyncio.AbstractEventLoop:
    """One background loop per process for callers that have none (scripts, tests)."""
    global _private
    with _private_lock:
        if _private is None:
            _private = asyncio.new_event_loop()
            threading.Thread(target=_private.run_forever, name="router-llm-loop", daemon=True).start()
        return _private


def _normalize(messages: str | Sequence[Any]) -> list[dict[str, str]]:
    """CrewAI messages (a string, or dicts whose content may be a list of parts) as role/text."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    out = []
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else str(message)
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, Mapping))
        role = message.get("role", "user") if isinstance(message, Mapping) else "user"
        out.append({"role": str(role), "content": str(content or "")})
    return out
