"""Turns a knowledge-graph question into a read-only Cypher query over the graph service's schema.

Cypher passes through unchanged (the graph service refuses anything that writes). Plain
language becomes a parameterised lookup of topics and entities whose names contain the
question's key phrase: (:Document {id, title})-[:COVERS {weight}]->(:Topic {name}) and
-[:MENTIONS {count}]->(:Entity {name, type}). Names are matched under three casings because
``lower``/``toLower`` differ between the embedded engine and Neo4j.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_CYPHER_START = re.compile(r"^\s*(MATCH|OPTIONAL\s+MATCH|WITH|UNWIND|RETURN|CALL)\b", re.IGNORECASE)
_FILLER = frozenset(
    """a an the of in on to for about and or with is are was were be by from at as which what who whom whose
    where when how do does did show me list find give get all any documents document docs doc files file
    mention mentions mentioning mentioned cover covers covering discuss discusses discussing talk talks talking
    related relate connected connection connections entity entities topic topics graph knowledge query
    please that this these those there their my our your its it""".split()
)

_MATCHES = "{v}.name CONTAINS $exact OR {v}.name CONTAINS $lower OR {v}.name CONTAINS $title"
TOPIC_LOOKUP = (
    "MATCH (d:Document)-[c:COVERS]->(t:Topic) WHERE " + _MATCHES.format(v="t")
    + " RETURN d.id AS document_id, d.title AS title, 'topic' AS kind, t.name AS name, c.weight AS weight"
)
ENTITY_LOOKUP = (
    "MATCH (d:Document)-[m:MENTIONS]->(e:Entity) WHERE " + _MATCHES.format(v="e")
    + " RETURN d.id AS document_id, d.title AS title, e.type AS kind, e.name AS name, m.count AS weight"
)


@dataclass(frozen=True)
class GraphQuery:
    cypher: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GraphPlan:
    """The queries to run for one question; ``translated`` when built from plain language."""

    queries: tuple[GraphQuery, ...]
    translated: bool
    phrase: str = ""


def key_phrase(question: str) -> str:
    words = re.findall(r"[\w][\w.&'-]*", question)
    kept = [w for w in words if w.lower() not in _FILLER]
    return " ".join(kept).strip(" .?!'")


def plan(query: str, params: dict[str, Any] | None = None) -> GraphPlan:
    if _CYPHER_START.match(query):
        return GraphPlan((GraphQuery(query, dict(params or {})),), translated=False)
    phrase = key_phrase(query) or query.strip()
    values = {"exact": phrase, "lower": phrase.lower(), "title": phrase.title()}
    return GraphPlan((GraphQuery(TOPIC_LOOKUP, values), GraphQuery(ENTITY_LOOKUP, values)), True, phrase)
