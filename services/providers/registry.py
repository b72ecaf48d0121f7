"""Which providers exist in this process, and which tasks each may serve.

A remote provider exists when its key variable is set (an OpenAI-compatible server may need
no key: ``OPENAI_BASE_URL`` alone enables it). The local model always exists but only serves
free-form tasks: it is too weak for anything whose output must be right (answers, summaries
and translation keep their extractive paths or need a remote provider).
"""

from __future__ import annotations

from services.providers.base import Provider
from services.providers.local_model import LocalModelConfig
from services.providers.local_provider import LocalProvider
from services.providers.pricing import PriceTable
from services.providers.settings import KEY_VARIABLES, ProviderSettings

FREE_FORM_TASKS = frozenset({"rewrite", "discussion_points", "recommendations", "agent_tool_choice", "crew", "chat"})
"""The tasks the local model may serve."""

# Compatible servers (Ollama, llama.cpp) accept any key; the SDK insists on one.
_NO_KEY = "not-needed"


def serves(provider: str, task: str) -> bool:
    return provider != "local" or task in FREE_FORM_TASKS


def available(provider: Provider) -> bool:
    """Whether a configured provider can take a call now (the Settings page's server exists only once chosen)."""
    check = getattr(provider, "available", None)
    return bool(check()) if callable(check) else True


def build_providers(settings: ProviderSettings, prices: PriceTable) -> dict[str, Provider]:
    """One instance per configured provider (no network, no model loading: both are lazy).

    Vendor SDKs are imported only for configured providers: together they take ~3 s to import.
    """
    providers: dict[str, Provider] = {}
    timeout = settings.provider_timeout_s
    if settings.anthropic_api_key is not None:
        from services.providers.anthropic_provider import AnthropicProvider

        providers["anthropic"] = AnthropicProvider(
            api_key=settings.anthropic_api_key.get_secret_value(),
            model=settings.anthropic_model,
            prices=prices,
            base_url=settings.anthropic_base_url,
            timeout_s=timeout,
        )
    if settings.openai_api_key is not None or settings.openai_base_url:
        from services.providers.openai_provider import OpenAIProvider

        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else _NO_KEY
        providers["openai"] = OpenAIProvider(
            api_key=key,
            model=settings.openai_model,
            prices=prices,
            base_url=settings.openai_base_url,
            timeout_s=timeout,
        )
    elif settings.model_server_file is not None:
        # No OpenAI provider from the environment: the server the Settings page chooses (none until it does).
        from services.providers.model_server import ConfiguredServerProvider, ModelServerFile

        providers["openai"] = ConfiguredServerProvider(ModelServerFile(settings.model_server_file), prices, timeout)
    if settings.gemini_api_key is not None:
        from services.providers.gemini_provider import GeminiProvider

        providers["gemini"] = GeminiProvider(
            api_key=settings.gemini_api_key.get_secret_value(),
            model=settings.gemini_model,
            prices=prices,
            base_url=settings.gemini_base_url,
            timeout_s=timeout,
        )
    providers["local"] = LocalProvider(LocalModelConfig(n_ctx=settings.local_n_ctx, n_threads=settings.local_threads))
    return providers


def enabling_variables(order: tuple[str, ...], configured: set[str]) -> list[str]:
    """The env vars that would add a remote provider to ``order``, for error messages."""
    return [
        " or ".join(KEY_VARIABLES[name]) for name in order if name in KEY_VARIABLES and name not in configured
    ]
