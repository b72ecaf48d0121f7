"""Ranking of related documents from the topics and entities they share with a start document.

score = sum over shared topics of min(weight here, weight there)
      + sum over shared entities of m / (1 + m), where m = min(mentions here, mentions there)

A shared topic counts as much as both documents care about it; a shared entity counts more the
more both mention it, but never more than 1, so one name repeated a hundred times cannot
outweigh several shared topics. Ties break by document id, so results are deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from services.graph.store import RelatedDocument, SharedFact


@dataclass
class _Tally:
    title: str
    score: float = 0.0
    topics: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)


def entity_share(mine: float, theirs: float) -> float:
    m = min(mine, theirs)
    return m / (1.0 + m) if m > 0 else 0.0


def rank(facts: Iterable[SharedFact], limit: int) -> list[RelatedDocument]:
    tallies: dict[str, _Tally] = {}
    for fact in facts:
        tally = tallies.setdefault(fact.document_id, _Tally(fact.title))
        if fact.kind == "topic":
            tally.score += min(fact.mine, fact.theirs)
            tally.topics.append(fact.name)
        else:
            tally.score += entity_share(fact.mine, fact.theirs)
            tally.entities.append(fact.name)
    # Rounded before sorting: backends return pairs in different orders, and float sums in a
    # different order differ in the last bits, which must not reorder equal scores.
    scored = [(round(t.score, 6), doc_id, t) for doc_id, t in tallies.items()]
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [
        RelatedDocument(doc_id, t.title, score, tuple(sorted(t.topics)), tuple(sorted(t.entities)))
        for score, doc_id, t in scored[:limit]
    ]
