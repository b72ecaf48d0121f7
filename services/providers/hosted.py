"""What every adapter of a hosted LLM API shares: the constructor the router's registry calls them with."""

from __future__ import annotations

from typing import Any

from services.providers.pricing import PriceTable


class HostedProvider:
    """A provider behind a vendor's HTTP API: ``model`` unless a request names another, priced by ``prices``.

    A subclass makes its SDK client in ``_connect``, with no retries of the SDK's own: the router owns retries
    and failover, and a request's deadline bounds every call."""

    name: str

    def __init__(self, *, api_key: str, model: str, prices: PriceTable, base_url: str | None = None,
                 timeout_s: float = 60.0) -> None:
        self.model = model
        self.context_window = prices.context_window(model)
        self._prices = prices
        self._client = self._connect(api_key, base_url, timeout_s)

    def _connect(self, api_key: str, base_url: str | None, timeout_s: float) -> Any:
        raise NotImplementedError
