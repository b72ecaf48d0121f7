"""Settings of the full analysis pipeline (``DOCUTHINKER_ANALYSIS_*``); the crew has its own
(``services.rag.crew.settings``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class AnalysisSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_ANALYSIS_", frozen=True, extra="ignore")

    default_question: str = "Provide a comprehensive intelligence brief for this document."
    """Question answered when a request sends none (the seed's default): answered with the cited summary."""
    summary_sentences: int = Field(default=5, ge=1, le=20)
    """Sentences of the overview (NLP Summarize; an LLM summary when the NLP service prefers one)."""
    max_topics: int = Field(default=8, ge=1, le=30)
    """Topics returned (NLP ExtractTopics)."""
    supporting_quotes: int = Field(default=4, ge=1, le=20)
    """Quotes from the document in supporting_context (the answer's citations first, then top passages)."""
    quote_chars: int = Field(default=300, ge=40, le=4000)
    """Longest quote in supporting_context (cut at a word boundary)."""
    max_text_chars: int = Field(default=200_000, ge=1000)
    """Longest document text sent to the NLP service (longer text is cut at a paragraph end)."""
    translation_chars: int = Field(default=4000, ge=100)
    """Longest text sent for translation (the overview, cut at a sentence end)."""
    graph_wait_s: float = Field(default=10.0, ge=0, le=120)
    """With sync_graph, how long the graph step waits for the graph-sync worker to confirm the document."""
