"""Settings of the rag -> nlp -> graph feed, read from ``DOCUTHINKER_RAG_GRAPH_*`` variables.

Ingestion never waits on the graph: a ready document is queued in the outbox and a
background worker extracts its topics and entities (NLP) and upserts them (graph). These
settings pace that worker and bound what it sends.
"""

from __future__ import annotations

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_ENTITY_LABELS = (
    "PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE",
)
"""Named things; dates, numbers, money and quantities would link unrelated documents."""


class GraphSyncSettings(BaseSettings):
    """The knowledge-graph feed of ingestion: toggle, worker pacing, retry backoff and limits."""

    model_config = SettingsConfigDict(env_prefix="DOCUTHINKER_RAG_GRAPH_", frozen=True, extra="ignore")

    sync: bool = True
    """Feed ready documents to the knowledge graph in the background (false: documents say DISABLED)."""
    poll_interval_s: float = Field(default=5.0, gt=0)
    """Longest sleep of the graph-sync worker between two looks at the outbox (new work wakes it at once)."""
    ingestion_quiet_s: float = Field(default=1.0, ge=0)
    """The worker starts syncing only once no document has been ingested, re-indexed or deleted
    for this long: NLP extraction competes with embedding for the same cores, and back-to-back
    uploads leave gaps of milliseconds between them."""
    yield_to_ingestion_max_s: float = Field(default=30.0, ge=0)
    """Longest the worker holds back in a row for ingestion; then it syncs one document and holds
    back again, so a long bulk upload delays the graph but never starves it (0: never holds back)."""
    backoff_initial_s: float = Field(default=2.0, gt=0)
    """Delay before the first retry of a failed graph sync; doubled on each further failure, each delay less up to a
    fifth at random so replicas' retries spread out (``services/runtime/backoff.py``)."""
    backoff_max_s: float = Field(default=300.0, gt=0)
    """Longest delay between two retries of a failed graph sync (it is retried until it succeeds)."""
    peer_watch_interval_s: float = Field(default=1.0, gt=0)
    """During an NLP or graph outage, how often the worker checks their health; once both serve, waiting entries
    are retried at once instead of at the end of their backoff."""
    call_timeout_s: float = Field(default=300.0, gt=0)
    """Deadline of each NLP or graph call made by the worker (NLP over a long document takes a while)."""
    max_text_chars: int = Field(default=2_000_000, gt=0)
    """Characters of a document sent to NLP; keep <= DOCUTHINKER_NLP_MAX_TEXT_CHARS (longer text is cut)."""
    max_topics: int = Field(default=10, ge=1, le=50)
    """Topics (keyphrases) per document, each a weighted COVERS edge."""
    max_entities: int = Field(default=200, ge=0, le=5000)
    """Entities per document (most mentioned first), each a MENTIONS edge."""
    entity_labels: tuple[str, ...] = DEFAULT_ENTITY_LABELS
    """spaCy entity labels that become graph entities (JSON list); empty keeps every label."""

    @model_validator(mode="after")
    def _backoff_order(self) -> GraphSyncSettings:
        if self.backoff_initial_s > self.backoff_max_s:
            raise ValueError(
                f"DOCUTHINKER_RAG_GRAPH_BACKOFF_INITIAL_S ({self.backoff_initial_s}) must not exceed "
                f"DOCUTHINKER_RAG_GRAPH_BACKOFF_MAX_S ({self.backoff_max_s})"
            )
        return self

