"""The Cypher the service itself runs, written once in the dialect both backends accept.

LadybugDB and Bolt servers (Neo4j, ArcadeDB) differ in DDL and in corners of the language, so
these statements keep to the common ground: MERGE/UNWIND of maps, OPTIONAL MATCH + count()
instead of pattern predicates, CASE instead of scalar min/max, explicit ``o.id <> d.id``
(LadybugDB's 2-hop patterns can return the start node). Every statement filters by
``$tenant``, even where the database already belongs to one tenant.
"""

from __future__ import annotations

from dataclasses import dataclass

UPSERT_DOCUMENTS = """
UNWIND $docs AS row
MERGE (d:Document {tenant: $tenant, id: row.id})
SET d.title = row.title, d.file_type = row.file_type
"""

DOCUMENT_TOPIC_KEYS = """
UNWIND $ids AS doc_id
MATCH (d:Document {tenant: $tenant, id: doc_id})-[:COVERS]->(t:Topic)
RETURN DISTINCT t.key AS key
"""

DOCUMENT_ENTITY_KEYS = """
UNWIND $ids AS doc_id
MATCH (d:Document {tenant: $tenant, id: doc_id})-[:MENTIONS]->(e:Entity)
RETURN DISTINCT e.key AS key
"""

DELETE_COVERS = """
UNWIND $ids AS doc_id
MATCH (d:Document {tenant: $tenant, id: doc_id})-[r:COVERS]->(:Topic)
DELETE r
"""

DELETE_MENTIONS = """
UNWIND $ids AS doc_id
MATCH (d:Document {tenant: $tenant, id: doc_id})-[r:MENTIONS]->(:Entity)
DELETE r
"""

# Bolt servers get the edges collected first and deleted after: ArcadeDB deleting while it streams
# the matches skips some edges of well-connected nodes (seen: 13 of 4,324 mentions survived a
# re-ingest and were duplicated). LadybugDB cannot DELETE an unwound variable, hence two forms.
DELETE_COVERS_COLLECTED = """
UNWIND $ids AS doc_id
MATCH (d:Document {tenant: $tenant, id: doc_id})-[r:COVERS]->(:Topic)
WITH collect(r) AS doomed
UNWIND doomed AS r
DELETE r
"""

DELETE_MENTIONS_COLLECTED = """
UNWIND $ids AS doc_id
MATCH (d:Document {tenant: $tenant, id: doc_id})-[r:MENTIONS]->(:Entity)
WITH collect(r) AS doomed
UNWIND doomed AS r
DELETE r
"""

REMAINING_EDGES = """
UNWIND $ids AS doc_id
MATCH (d:Document {tenant: $tenant, id: doc_id})-[r:COVERS|MENTIONS]->()
RETURN count(r) AS n
"""

MERGE_TOPICS = """
UNWIND $topics AS row
MERGE (t:Topic {tenant: $tenant, key: row.key})
ON CREATE SET t.name = row.name
"""

# CREATE, not MERGE: the plan deleted the documents' edges first and passes each pair once, and
# MERGE of relationships is ten times slower on ArcadeDB (7.5 s against 0.6 s per 1,000 edges).
LINK_TOPICS = """
UNWIND $covers AS row
MATCH (d:Document {tenant: $tenant, id: row.doc})
MATCH (t:Topic {tenant: $tenant, key: row.key})
CREATE (d)-[:COVERS {weight: row.weight}]->(t)
"""

MERGE_ENTITIES = """
UNWIND $entities AS row
MERGE (e:Entity {tenant: $tenant, key: row.key})
ON CREATE SET e.name = row.name, e.type = row.type
ON MATCH SET e.type = CASE WHEN e.type = '' THEN row.type ELSE e.type END
"""

LINK_ENTITIES = """
UNWIND $mentions AS row
MATCH (d:Document {tenant: $tenant, id: row.doc})
MATCH (e:Entity {tenant: $tenant, key: row.key})
CREATE (d)-[:MENTIONS {count: row.count}]->(e)
"""

ORPHAN_TOPICS = """
UNWIND $keys AS topic_key
MATCH (t:Topic {tenant: $tenant, key: topic_key})
OPTIONAL MATCH (t)<-[c:COVERS]-(:Document)
WITH t, count(c) AS uses
WHERE uses = 0
RETURN t.key AS key
"""

ORPHAN_ENTITIES = """
UNWIND $keys AS entity_key
MATCH (e:Entity {tenant: $tenant, key: entity_key})
OPTIONAL MATCH (e)<-[m:MENTIONS]-(:Document)
WITH e, count(m) AS uses
WHERE uses = 0
RETURN e.key AS key
"""

DELETE_TOPICS = """
UNWIND $keys AS topic_key
MATCH (t:Topic {tenant: $tenant, key: topic_key})
DELETE t
"""

DELETE_ENTITIES = """
UNWIND $keys AS entity_key
MATCH (e:Entity {tenant: $tenant, key: entity_key})
DELETE e
"""

COUNT_DOCUMENT = """
MATCH (d:Document {tenant: $tenant, id: $id})
RETURN count(d) AS n
"""

DETACH_DELETE_DOCUMENT = """
MATCH (d:Document {tenant: $tenant, id: $id})
DETACH DELETE d
"""

# Scores as documented in ``related``: a shared topic adds min(weight, weight), a shared entity
# m / (1 + m) with m = min(count, count). One 2-hop pattern over both edge types, aggregated and
# cut in the engine: only the best rows travel (a popular topic links a document to most others).
RELATED_DOCUMENTS = """
MATCH (d:Document {tenant: $tenant, id: $id})-[a:COVERS|MENTIONS]->(x)<-[b:COVERS|MENTIONS]-(o:Document)
WHERE o.id <> d.id AND o.tenant = $tenant
WITH o,
     CASE WHEN a.weight IS NULL THEN 0.0 WHEN a.weight < b.weight THEN a.weight ELSE b.weight END AS w,
     CASE WHEN a.count IS NULL THEN 0 WHEN a.count < b.count THEN a.count ELSE b.count END AS m
RETURN o.id AS id, o.title AS title, sum(w + m / (1.0 + m)) AS score
ORDER BY score DESC, id
LIMIT $limit
"""

SHARED_ITEMS = """
MATCH (d:Document {tenant: $tenant, id: $id})-[a:COVERS|MENTIONS]->(x)<-[:COVERS|MENTIONS]-(o:Document)
WHERE o.tenant = $tenant AND o.id IN $ids
RETURN o.id AS id, x.name AS name, a.weight IS NOT NULL AS topic
"""

ENTITY_WITH_DOCUMENTS = """
MATCH (e:Entity {tenant: $tenant, key: $key})
OPTIONAL MATCH (d:Document)-[m:MENTIONS]->(e)
RETURN e.name AS name, e.type AS type, d.id AS id, d.title AS title, m.count AS mentions
ORDER BY mentions DESC, id
LIMIT $limit
"""

STATS = {
    "documents": "MATCH (d:Document {tenant: $tenant}) RETURN count(d) AS n",
    "topics": "MATCH (t:Topic {tenant: $tenant}) RETURN count(t) AS n",
    "entities": "MATCH (e:Entity {tenant: $tenant}) RETURN count(e) AS n",
    "covers_edges": "MATCH (:Document {tenant: $tenant})-[r:COVERS]->(:Topic) RETURN count(r) AS n",
    "mentions_edges": "MATCH (:Document {tenant: $tenant})-[r:MENTIONS]->(:Entity) RETURN count(r) AS n",
}


@dataclass(frozen=True)
class Dialect:
    """The few statements whose text differs by backend."""

    delete_covers: str
    delete_mentions: str


EMBEDDED = Dialect(DELETE_COVERS, DELETE_MENTIONS)
BOLT = Dialect(DELETE_COVERS_COLLECTED, DELETE_MENTIONS_COLLECTED)
