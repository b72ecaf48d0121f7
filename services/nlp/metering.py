"""What the LLM calls behind one NLP result cost, so that the caller can charge it to its budgets.

The NLP service keeps no budgets; the orchestrator does (``GET /v1/costs``). Every generation
goes through ``generation.generate``, which adds its priced usage to the meter of the
operation it serves. Each response then reports its meter per provider and model. That
includes calls whose output was rejected in favour of a grounded fallback: they were paid for
all the same. Concurrent windows of one operation (rewrite, translate) share its meter, because
tasks inherit the context they were started from.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from services.providers.base import GenerationResult, Usage


@dataclass(frozen=True)
class Charge:
    provider: str
    model: str
    calls: int
    usage: Usage


class Meter:
    def __init__(self) -> None:
        self._charges: dict[tuple[str, str], Charge] = {}

    def add(self, provider: str, model: str, usage: Usage) -> None:
        key = (provider, model)
        previous = self._charges.get(key)
        self._charges[key] = (
            Charge(provider, model, 1, usage)
            if previous is None
            else Charge(provider, model, previous.calls + 1, previous.usage + usage)
        )

    @property
    def charges(self) -> tuple[Charge, ...]:
        return tuple(self._charges.values())


_current: contextvars.ContextVar[Meter | None] = contextvars.ContextVar("docuthinker_nlp_meter", default=None)


@contextmanager
def metered() -> Iterator[Meter]:
    """Collects the LLM calls made inside the block (in this task and the tasks it starts)."""
    meter = Meter()
    token = _current.set(meter)
    try:
        yield meter
    finally:
        _current.reset(token)


def charge(result: GenerationResult) -> None:
    meter = _current.get()
    if meter is not None:
        meter.add(result.provider, result.model, result.usage)
