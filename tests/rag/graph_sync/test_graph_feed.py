"""The feed's shaping of NLP output into facts the graph accepts, and its settings."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from services.rag.documents import Section
from services.rag.graph_sync.feed import DocumentFacts, document_text, graph_entities, graph_topics, tenant_context
from services.rag.graph_sync.settings import GraphSyncSettings
from services.runtime import current_tenant
from services.runtime.request_context import current


def test_document_text_joins_sections_and_cuts_at_a_paragraph_end() -> None:
    sections = [Section(text="  First part.  "), Section(text=""), Section(text="Second part is longer.")]
    assert document_text(sections, 1000) == "First part.\n\nSecond part is longer."
    assert document_text(sections, 20) == "First part."
    assert document_text([Section(text="x" * 50)], 20) == "x" * 20


def test_facts_the_graph_would_refuse_are_dropped_not_sent() -> None:
    topics = graph_topics([("wind turbines", 0.8), ("—", 0.5), ("zero", 0.0), ("x" * 600, 0.4),
                           ("nan", float("nan"))], limit=10)
    assert topics == (("wind turbines", 0.8), ("zero", 1e-4))
    entities = graph_entities([(" Ada Lovelace ", "PERSON", 3), ("...", "ORG", 1), ("Acme", "ORG", 0)], limit=10)
    assert entities == (("Ada Lovelace", "PERSON", 3), ("Acme", "ORG", 1))
    assert graph_entities([("A", "ORG", 1), ("B", "ORG", 1)], limit=1) == (("A", "ORG", 1),)


def test_facts_round_trip_through_json() -> None:
    facts = DocumentFacts((("turbines", 0.5),), (("Ada", "PERSON", 2),))
    assert DocumentFacts.from_json(facts.to_json()) == facts


def test_tenant_context_binds_tenant_and_deadline_only_inside() -> None:
    assert current() is None
    with tenant_context("acme", 30):
        assert current_tenant() == "acme"
        assert 29 < current().time_remaining() <= 30
        assert current().request_id.startswith("graph-sync-")
    assert current() is None


def test_settings_from_environment(monkeypatch) -> None:
    monkeypatch.setenv("DOCUTHINKER_RAG_GRAPH_SYNC", "false")
    monkeypatch.setenv("DOCUTHINKER_RAG_GRAPH_ENTITY_LABELS", '["PERSON"]')
    monkeypatch.setenv("DOCUTHINKER_RAG_GRAPH_POLL_INTERVAL_S", "0.1")
    settings = GraphSyncSettings()
    assert settings.sync is False and settings.entity_labels == ("PERSON",) and settings.poll_interval_s == 0.1
    assert GraphSyncSettings.model_fields["sync"].default is True
    with pytest.raises(ValidationError, match="BACKOFF_INITIAL_S"):
        GraphSyncSettings(backoff_initial_s=10, backoff_max_s=1)
