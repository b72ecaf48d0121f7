"""The NLP service's door to the LLM provider layer.

Everything generative goes through ``TextGenerator.generate(task, request)``. The real
implementation is the provider router (``services.providers.router``), which picks a
configured provider per task and raises ``NoProviderAvailable`` (a FailedPrecondition
naming the env var that enables one) when none can serve it. Builds without the router
get a generator that fails the same way, so callers handle one error path.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from services.clients.results import Engine
from services.nlp import metering
from services.providers.base import GenerationRequest, GenerationResult, Message, ProviderError
from services.runtime.errors import Unavailable

log = logging.getLogger("docuthinker.nlp.generation")

Model = TypeVar("Model", bound=BaseModel)


class TextGenerator(Protocol):
    async def generate(self, task: str, request: GenerationRequest) -> GenerationResult: ...


async def generate(generator: TextGenerator, task: str, request: GenerationRequest) -> GenerationResult:
    """One generation, charged to the current meter; a provider failure that escaped the router becomes UNAVAILABLE."""
    try:
        result = await generator.generate(task=task, request=request)
    except ProviderError as exc:
        raise Unavailable(
            f"{exc.provider} failed on {task}: {exc.message}",
            reason="PROVIDER_ERROR",
            metadata={"provider": exc.provider, "kind": exc.kind, "task": task},
        ) from exc
    metering.charge(result)
    return result


def engine_of(result: GenerationResult) -> Engine:
    return Engine(result.provider, result.model)


def ask(prompt: str, system: str, *, schema: type[BaseModel] | None = None, max_tokens: int = 1024,
        temperature: float = 0.3) -> GenerationRequest:
    return GenerationRequest(
        messages=[Message("user", prompt)],
        system=system,
        json_schema=schema.model_json_schema() if schema is not None else None,
        max_tokens=max_tokens,
        temperature=temperature,
    )


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_json(text: str, schema: type[Model]) -> Model | None:
    """The first JSON value in ``text`` (bare, fenced or embedded in prose) valid against ``schema``."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for start, char in enumerate(candidate):
            if char not in "{[":
                continue
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                continue
            model = _validate(value, schema)
            if model is not None:
                return model
    return None


def _validate(value: Any, schema: type[Model]) -> Model | None:
    if isinstance(value, list) and len(schema.model_fields) == 1:
        value = {next(iter(schema.model_fields)): value}  # a bare list for a one-field object
    try:
        return schema.model_validate(value)
    except ValidationError:
        return None
