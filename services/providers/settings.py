"""Provider configuration, read from the environment in one place.

DocuThinker's own knobs use the ``DOCUTHINKER_`` prefix; API keys and base URLs use each
vendor's standard variable names so that existing setups (and the SDKs' docs) just work.
Keys are ``SecretStr``: they never show up in a settings dump or a log line.
"""

from __future__ import annotations

import pathlib

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

PROVIDER_NAMES = ("anthropic", "openai", "gemini", "local")

# The env vars that enable each remote provider, named in NoProviderAvailable messages.
KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
}


class ProviderSettings(BaseSettings):
    """Which LLM providers exist, in which order they are tried, and their models."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_", frozen=True, extra="ignore")

    provider_order: str = "anthropic,openai,gemini,local"
    """Failover order for every task (comma-separated provider names)."""
    task_providers: str = ""
    """Per-task overrides of the order, e.g. ``translate=openai,gemini;rewrite=local``."""
    prices_file: pathlib.Path | None = None
    """JSON or TOML file overriding/adding model prices and context windows (see pricing.py)."""
    provider_timeout_s: float = Field(default=60.0, gt=0)
    """Deadline of one provider attempt; the request's timeout and the RPC's deadline bound all
    attempts together (failover included)."""

    anthropic_model: str = "claude-sonnet-4-20250514"
    """Model used when Anthropic serves a task."""
    openai_model: str = "gpt-4o-mini"
    """Model used when OpenAI (or the OpenAI-compatible server) serves a task."""
    gemini_model: str = "gemini-2.5-flash"
    """Model used when Gemini serves a task."""
    local_n_ctx: int = Field(default=8192, ge=512)
    """Context size given to the local model (SmolLM2 was trained with 8192)."""
    model_server_file: pathlib.Path | None = None
    """Where the web app's Settings page keeps the OpenAI-compatible server it chose (Ollama, llama.cpp, vLLM), read
    by every process's router (``services/providers/model_server.py``); the launcher sets
    ``<data_dir>/settings/model-server.json``. Unused when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set."""
    local_threads: int = Field(default=1, ge=1)
    """CPU threads of the local model; 2 is faster only on an otherwise idle machine (see
    local_model.LocalModelConfig.n_threads)."""

    anthropic_api_key: SecretStr | None = Field(default=None, validation_alias="ANTHROPIC_API_KEY")
    """Enables the Anthropic provider (official ``anthropic`` SDK)."""
    anthropic_base_url: str | None = Field(default=None, validation_alias="ANTHROPIC_BASE_URL")
    """Overrides the Anthropic API endpoint (proxies, tests)."""
    openai_api_key: SecretStr | None = Field(default=None, validation_alias="OPENAI_API_KEY")
    """Enables the OpenAI provider (official ``openai`` SDK)."""
    openai_base_url: str | None = Field(default=None, validation_alias="OPENAI_BASE_URL")
    """Any OpenAI-compatible server (vLLM, Ollama, llama.cpp) when set."""
    gemini_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("GOOGLE_API_KEY", "GEMINI_API_KEY")
    )
    """Enables the Gemini provider (official ``google-genai`` SDK)."""
    gemini_base_url: str | None = Field(default=None, validation_alias="GOOGLE_GEMINI_BASE_URL")
    """Overrides the Gemini API endpoint (proxies, tests)."""

    def order(self) -> tuple[str, ...]:
        return _names(self.provider_order)

    def order_for(self, task: str) -> tuple[str, ...]:
        overrides = parse_task_providers(self.task_providers)
        return overrides.get(task, self.order())


def _names(csv: str) -> tuple[str, ...]:
    names = tuple(n.strip().lower() for n in csv.split(",") if n.strip())
    unknown = [n for n in names if n not in PROVIDER_NAMES]
    if unknown:
        raise ValueError(f"unknown provider(s) {unknown}; known: {', '.join(PROVIDER_NAMES)}")
    return names


def parse_task_providers(spec: str) -> dict[str, tuple[str, ...]]:
    """``"translate=openai,gemini;rewrite=local"`` -> ``{"translate": ("openai", "gemini"), ...}``."""
    result: dict[str, tuple[str, ...]] = {}
    for entry in spec.split(";"):
        if not entry.strip():
            continue
        task, sep, providers = entry.partition("=")
        if not sep or not task.strip():
            raise ValueError(f"bad DOCUTHINKER_TASK_PROVIDERS entry {entry!r}: expected task=provider,provider")
        result[task.strip()] = _names(providers)
    return result
