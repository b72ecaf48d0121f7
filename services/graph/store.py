"""The graph-store port: what the graph service needs from a backend, and the records it exchanges.

Two backends implement it, chosen by DOCUTHINKER_GRAPH_BACKEND: ``ladybug_store`` (embedded, one
database per tenant) and ``neo4j_store`` (Bolt). The same congruence suite runs against both.
Every method takes the tenant explicitly; a store never reads request context itself.
Keys (``TopicFact.key``, ``EntityFact.key``) are canonical (see ``entity_resolution``): stores
MERGE on them and never normalise anything themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from services.clients.results import DeleteResult, EntityView, GraphStats, RelatedDocument


@dataclass(frozen=True)
class TopicFact:
    key: str
    name: str
    weight: float


@dataclass(frozen=True)
class EntityFact:
    key: str
    name: str
    type: str
    count: int


@dataclass(frozen=True)
class DocumentFacts:
    """A document and its complete set of facts: writing it replaces whatever edges it had."""

    document_id: str
    title: str = ""
    file_type: str = ""
    topics: tuple[TopicFact, ...] = ()
    entities: tuple[EntityFact, ...] = ()

    @property
    def fact_count(self) -> int:
        return len(self.topics) + len(self.entities)


@dataclass(frozen=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...] = field(default=())
    """Each row as JSON-compatible values keyed by column (see ``values``)."""
    truncated: bool = False


class GraphStore(Protocol):
    backend: str
    """"ladybug" or "neo4j", reported by GetGraphStats."""

    async def upsert(self, tenant: str, documents: Sequence[DocumentFacts]) -> None:
        """Writes the documents in one transaction; each replaces its previous edges; orphans go."""
        ...

    async def delete_document(self, tenant: str, document_id: str) -> DeleteResult:
        """Removes the document, its edges and any topic or entity it leaves without documents."""
        ...

    async def related(self, tenant: str, document_id: str, limit: int) -> list[RelatedDocument] | None:
        """Up to ``limit`` documents sharing topics or entities with this one, scored and ordered as
        ``related`` documents; None when the document does not exist."""
        ...

    async def entity(self, tenant: str, key: str, limit: int) -> EntityView | None:
        """The entity with that key and up to ``limit`` documents mentioning it, most mentions first."""
        ...

    async def stats(self, tenant: str) -> GraphStats:
        ...

    async def query(
        self, tenant: str, cypher: str, params: Mapping[str, Any], limit: int, timeout_s: float
    ) -> QueryResult:
        """Runs already-validated read-only Cypher confined to the tenant's data, in a read-only
        transaction that is rolled back; at most ``limit`` rows (``truncated`` if there were more)."""
        ...

    async def close(self) -> None:
        ...
