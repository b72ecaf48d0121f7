"""Each agent's provider order: its preferred provider first, then the router's ``crew`` order.

The agent gets a ``Router`` of its own over the process-wide router's provider instances (one
SDK client and one loaded local model per process), so the router stays the only retry and
failover layer. A preferred provider that is not configured (no key) or not allowed for the
``crew`` task is skipped, not an error: offline every agent runs on the local model.
"""

from __future__ import annotations

from services.providers.router import Router
from services.providers.settings import ProviderSettings

TASK = "crew"


def agent_order(shared: Router, preferred: str) -> list[str]:
    available = shared.providers_for(TASK)
    return ([preferred] if preferred in available else []) + [n for n in available if n != preferred]


def agent_router(shared: Router, settings: ProviderSettings, preferred: str) -> Router:
    """A router whose ``crew`` order puts ``preferred`` first (when it is configured)."""
    order = agent_order(shared, preferred)
    if not order:  # the shared router's NoProviderAvailable names the variables that would enable one
        return shared
    pinned = settings.model_copy(update={"provider_order": ",".join(order), "task_providers": ""})
    return Router({name: shared.provider(name) for name in order}, pinned)
