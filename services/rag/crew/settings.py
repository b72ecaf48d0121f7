"""Settings of the analyst -> cross-referencer -> curator crew (``DOCUTHINKER_CREW_*``).

Each agent names the provider it prefers. The preference applies only when that provider is
configured (its key is set) and allowed for the ``crew`` task by the router's order; the
agent then fails over along that order, which ends with the offline local model. So the
seed's line-up (OpenAI, Gemini, Anthropic) is what runs when the three keys exist, and every
agent runs on SmolLM2 when none does. Models come from the provider settings
(``DOCUTHINKER_OPENAI_MODEL`` ...).
"""

from __future__ import annotations

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.providers.settings import PROVIDER_NAMES


class CrewSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_CREW_", frozen=True, extra="ignore")

    analyst_provider: str = "openai"
    """Provider the Document Analyst prefers (the seed's: OpenAI gpt-4o-mini)."""
    cross_referencer_provider: str = "gemini"
    """Provider the Cross-Referencer prefers (the seed's: Gemini)."""
    curator_provider: str = "anthropic"
    """Provider the Insights Curator prefers (the seed's: Anthropic Claude)."""
    max_iter: int = Field(default=1, ge=1, le=5)
    """CrewAI iterations per agent (each may be one LLM call); 1 keeps a crew run to three calls."""
    max_tokens: int = Field(default=160, ge=32, le=4096)
    """Output token cap of each agent's answer (the local model writes ~20-80 tokens/s)."""
    temperature: float = Field(default=0.2, ge=0, le=2)
    """Sampling temperature of the agents (the seed used 0.15-0.2)."""
    search_top_k: int = Field(default=4, ge=1, le=20)
    """Chunks document_search returns per query."""
    snippet_chars: int = Field(default=300, ge=40, le=4000)
    """Longest snippet document_search returns per chunk (cut at a word boundary)."""
    max_topics: int = Field(default=8, ge=1, le=30)
    """Topics document_topics returns (NLP ExtractTopics)."""
    max_text_chars: int = Field(default=200_000, ge=1000)
    """Longest document text sent to the NLP service for topics (longer text is cut at a paragraph)."""

    @field_validator("analyst_provider", "cross_referencer_provider", "curator_provider")
    @classmethod
    def _known(cls, value: str) -> str:
        name = value.strip().lower()
        if name not in PROVIDER_NAMES:
            raise ValueError(f"unknown provider {value!r}; known: {', '.join(PROVIDER_NAMES)}")
        return name

    def preferred(self, role_key: str) -> str:
        return {"analyst": self.analyst_provider, "cross_referencer": self.cross_referencer_provider,
                "curator": self.curator_provider}[role_key]
