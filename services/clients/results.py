"""Result values a service returns and its typed client hands on alike: the servers build them, the clients decode
them from the wire, so both import them from here (the graph service's store and the graph client, nlp's engines
and the nlp client)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Engine:
    """What produced a result."""

    provider: str
    """"local", "spacy", "vader", or the LLM provider ("anthropic", "openai", "gemini", ...)."""
    model: str


@dataclass(frozen=True)
class DeleteResult:
    deleted: bool
    orphans_removed: int


@dataclass(frozen=True)
class RelatedDocument:
    document_id: str
    title: str
    score: float
    shared_topics: tuple[str, ...] = ()
    shared_entities: tuple[str, ...] = ()


@dataclass(frozen=True)
class EntityMention:
    document_id: str
    title: str
    count: int


@dataclass(frozen=True)
class EntityView:
    name: str
    type: str
    documents: tuple[EntityMention, ...] = ()


@dataclass(frozen=True)
class GraphStats:
    documents: int = 0
    topics: int = 0
    entities: int = 0
    covers_edges: int = 0
    mentions_edges: int = 0


@dataclass(frozen=True)
class UpsertSummary:
    documents: int = 0
    topics: int = 0
    entities: int = 0
    batches: int = 0
