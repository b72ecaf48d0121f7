"""Related documents: which documents share topics and entities with a start document, and how much.

score = sum over shared topics of min(weight here, weight there)
      + sum over shared entities of m / (1 + m), where m = min(mentions here, mentions there)

A shared topic counts as much as both documents care about it; a shared entity counts more the
more both mention it, but never more than 1, so one name repeated a hundred times cannot
outweigh several shared topics. The stores compute the sums in Cypher (``statements.
RELATED_DOCUMENTS``) so that only the best rows leave the engine; ``assemble`` gives every backend
the same final order: scores rounded to 6 places (backends add in different orders, and the last
bits must not reorder equal scores), ties broken by document id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from services.clients.results import RelatedDocument

RANK_SLACK = 10
"""Extra rows fetched beyond the limit, so re-ranking rounded scores cannot drop a tied document."""


def entity_share(mine: float, theirs: float) -> float:
    """An entity's contribution (the Cypher computes the same)."""
    m = min(mine, theirs)
    return m / (1.0 + m) if m > 0 else 0.0


def assemble(
    scored: Iterable[Mapping[str, Any]], shared: Iterable[Mapping[str, Any]], limit: int
) -> list[RelatedDocument]:
    """``scored``: rows (id, title, score); ``shared``: rows (id, name, topic) naming what they share."""
    ranked = sorted(
        ((round(float(r["score"]), 6), r["id"], r["title"] or "") for r in scored), key=lambda x: (-x[0], x[1])
    )
    topics: dict[str, set[str]] = {}
    entities: dict[str, set[str]] = {}
    for row in shared:
        (topics if row["topic"] else entities).setdefault(row["id"], set()).add(row["name"])
    return [
        RelatedDocument(
            doc_id, title, score, tuple(sorted(topics.get(doc_id, ()))), tuple(sorted(entities.get(doc_id, ())))
        )
        for score, doc_id, title in ranked[:limit]
    ]
