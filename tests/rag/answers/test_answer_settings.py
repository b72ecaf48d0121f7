"""Answer settings from DOCUTHINKER_RAG_* variables become the retrieval configuration."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from services.rag.answers.settings import AnswerSettings
from services.rag.retrieval import FusionMethod, Normalisation
from services.rag.retrieval.config import DEFAULT_FUSION


def test_defaults_are_the_measured_ones():
    config = AnswerSettings().retrieval_config()
    assert config.default_fusion is DEFAULT_FUSION and config.default_top_k == 6 and config.rrf_k == 60


def test_environment_overrides(monkeypatch):
    monkeypatch.setenv("DOCUTHINKER_RAG_FUSION", "rrf")
    monkeypatch.setenv("DOCUTHINKER_RAG_DENSE_WEIGHT", "0.3")
    monkeypatch.setenv("DOCUTHINKER_RAG_SCORE_NORMALISATION", "zscore")
    monkeypatch.setenv("DOCUTHINKER_RAG_TOP_K", "4")
    config = AnswerSettings().retrieval_config()
    assert config.default_fusion is FusionMethod.RRF and config.default_top_k == 4
    assert config.score_fusion.dense_weight == 0.3 and config.score_fusion.normalisation is Normalisation.ZSCORE


@pytest.mark.parametrize(("name", "value"), [("DOCUTHINKER_RAG_FUSION", "magic"), ("DOCUTHINKER_RAG_DENSE_WEIGHT", "1.5"),
                                             ("DOCUTHINKER_RAG_TOP_K", "80")])
def test_invalid_values_are_refused(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        AnswerSettings()
