"""Settings of retrieval and grounded answers, read from ``DOCUTHINKER_RAG_*`` environment variables.

Kept apart from ``services.rag.settings`` (ingestion) so each side owns its knobs; both use
the same prefix and ignore each other's variables.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.rag.retrieval.config import DEFAULT_FUSION, DEFAULT_SCORE_FUSION, FusionMethod, RetrievalConfig
from services.rag.retrieval.fusion import Normalisation, ScoreFusionConfig
from services.vocabulary.limits import MAX_QUESTION_CHARS

FusionName = Literal["rrf", "score", "dense", "keyword"]
_FUSIONS: dict[FusionName, FusionMethod] = {"rrf": FusionMethod.RRF, "score": FusionMethod.SCORE, "dense": FusionMethod.DENSE_ONLY,
            "keyword": FusionMethod.KEYWORD_ONLY}


class AnswerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_RAG_", frozen=True, extra="ignore")

    fusion: FusionName = {v: k for k, v in _FUSIONS.items()}[DEFAULT_FUSION]
    """Default fusion of keyword and dense retrieval; the default beat BM25, dense and RRF on SciFact nDCG@10
    (bench/results/2026-11-30-vm-quick.md, quality)."""
    dense_weight: float = Field(default=DEFAULT_SCORE_FUSION.dense_weight, ge=0, le=1)
    """Weight of the dense retriever in the normalised score fusion (keyword gets 1 - this)."""
    score_normalisation: Literal["minmax", "zscore", "max"] = DEFAULT_SCORE_FUSION.normalisation.value
    """Per-retriever score normalisation of the score fusion."""
    top_k: int = Field(default=6, ge=1, le=100)
    """Chunks retrieved when a request leaves top_k at 0."""
    max_top_k: int = Field(default=50, ge=1, le=200)
    """Largest top_k a request may ask for (INVALID_ARGUMENT above)."""
    max_question_chars: int = Field(default=MAX_QUESTION_CHARS, ge=16)
    """Longest question or search query, in characters (INVALID_ARGUMENT above)."""
    max_document_ids: int = Field(default=100, ge=1)
    """Most ``document_ids`` one question or search may name (INVALID_ARGUMENT above)."""
    abstain_threshold: float | None = Field(default=None, ge=0, le=1)
    """Extractive answers abstain when the answer ranker's probability for the best evidence is below this; unset:
    the threshold chosen out of fold with the shipped ranker (services/rag/answers/models/unit_ranker.json)."""
    generative_answers: bool = True
    """Use an LLM provider for answers when one is configured for the ``answer`` task (else extractive)."""
    llm_planner: bool = True
    """Use an LLM provider to plan agent queries when one is configured for the ``plan`` task (else rules)."""
    graph_expansion: bool = True
    """Allow Search's expand_with_graph to ask the graph service for related documents."""

    @model_validator(mode="after")
    def _top_k_in_range(self) -> AnswerSettings:
        if self.top_k > self.max_top_k:
            raise ValueError("DOCUTHINKER_RAG_TOP_K must not exceed DOCUTHINKER_RAG_MAX_TOP_K")
        return self

    def retrieval_config(self) -> RetrievalConfig:
        return RetrievalConfig(
            default_top_k=self.top_k,
            max_top_k=self.max_top_k,
            max_question_chars=self.max_question_chars,
            max_document_ids=self.max_document_ids,
            default_fusion=_FUSIONS[self.fusion],
            score_fusion=ScoreFusionConfig(self.dense_weight, Normalisation(self.score_normalisation)),
        )
