"""Model prices ($ per 1M tokens) and context windows, and the cost of a call.

Models are matched by the longest known key contained in the model id, so
``claude-sonnet-4-20250514`` is priced as ``sonnet-4`` and ``gpt-4o-mini`` is not priced as
``gpt-4``. Defaults are the seed's table; ``DOCUTHINKER_PRICES_FILE`` (JSON or TOML) overrides
or adds entries::

    [prices.my-model]            # or {"prices": {"my-model": {...}}} in JSON
    input = 1.0
    output = 2.0
    cache_read = 0.1             # optional: defaults to input (no discount assumed)
    cache_write = 1.25           # optional: defaults to input
    [context_windows]
    my-model = 32768
"""

from __future__ import annotations

import json
import pathlib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from services.providers.base import Usage

PER_MILLION = 1_000_000


@dataclass(frozen=True)
class Price:
    """Dollars per one million tokens."""

    input: float
    output: float
    cache_read: float | None = None
    """Price of input read from the prompt cache; None: same as ``input``."""
    cache_write: float | None = None
    """Price of input written to the prompt cache; None: same as ``input``."""

    def cost(self, usage: Usage) -> float:
        cache_read = self.input if self.cache_read is None else self.cache_read
        cache_write = self.input if self.cache_write is None else self.cache_write
        total = (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * cache_read
            + usage.cache_write_tokens * cache_write
        )
        return total / PER_MILLION


FREE = Price(0.0, 0.0, 0.0, 0.0)
UNKNOWN = Price(1.0, 3.0, 0.1, 1.25)

DEFAULT_PRICES: dict[str, Price] = {
    "sonnet-4": Price(3.0, 15.0, 0.3, 3.75),
    "haiku-4.5": Price(0.8, 4.0, 0.08, 1.0),
    "opus-4": Price(15.0, 75.0, 1.5, 18.75),
    "gpt-4": Price(30.0, 60.0),
    "gpt-3.5-turbo": Price(0.5, 1.5),
    "gpt-4o-mini": Price(0.15, 0.6),
    "gemini-pro": Price(0.5, 1.5),
    "gemini-1.5-pro": Price(3.5, 10.5),
    # Not in the seed table: the default Gemini model, at Google's list price for text; its
    # cache discount is left out (cached input priced as input: an upper bound).
    "gemini-2.5-flash": Price(0.3, 2.5),
    # Local models run on our own CPU.
    "smollm2": FREE,
}

DEFAULT_CONTEXT_WINDOW = 128_000
DEFAULT_CONTEXT_WINDOWS: dict[str, int] = {
    "sonnet-4": 200_000,
    "haiku-4.5": 200_000,
    "opus-4": 200_000,
    "gpt-4": 128_000,
    "gpt-3.5": 16_385,
    "gemini-pro": 1_000_000,
    "gemini-1.5-pro": 2_000_000,
    "gemini-2.5-flash": 1_048_576,
}


def _match(model: str, table: Mapping[str, Any]) -> str | None:
    lowered = model.lower()
    keys = [k for k in table if k.lower() in lowered]
    return max(keys, key=len) if keys else None


@dataclass(frozen=True)
class PriceTable:
    prices: Mapping[str, Price]
    context_windows: Mapping[str, int]

    def price_of(self, model: str) -> Price:
        key = _match(model, self.prices)
        return self.prices[key] if key else UNKNOWN

    def context_window(self, model: str) -> int:
        key = _match(model, self.context_windows)
        return self.context_windows[key] if key else DEFAULT_CONTEXT_WINDOW

    def with_cost(self, model: str, usage: Usage, *, local: bool = False) -> Usage:
        """``usage`` with ``cost_usd`` set; local models are free whatever their name."""
        price = FREE if local else self.price_of(model)
        return replace(usage, cost_usd=price.cost(usage))


def _read(path: pathlib.Path) -> Mapping[str, Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".toml":
        return tomllib.loads(text)
    return json.loads(text)


def load_price_table(path: pathlib.Path | None = None) -> PriceTable:
    """The default table, with the entries of ``path`` (JSON or TOML) laid over it."""
    prices = dict(DEFAULT_PRICES)
    windows = dict(DEFAULT_CONTEXT_WINDOWS)
    if path is not None:
        data = _read(path)
        for model, entry in (data.get("prices") or {}).items():
            prices[model] = Price(
                input=float(entry["input"]),
                output=float(entry["output"]),
                cache_read=None if entry.get("cache_read") is None else float(entry["cache_read"]),
                cache_write=None if entry.get("cache_write") is None else float(entry["cache_write"]),
            )
        for model, window in (data.get("context_windows") or {}).items():
            windows[model] = int(window)
    return PriceTable(prices, windows)
