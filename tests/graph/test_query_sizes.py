"""Values a user query builds are bounded on its parsed expressions, whatever the quoting; the engine's
memory for running queries is watched."""

from __future__ import annotations

import pytest

from services.graph.knowledge_graph import KnowledgeGraph
from services.graph.ladybug_store import LadybugGraphStore
from services.graph.query_sizes import check_value_sizes
from services.graph.settings import GraphSettings
from services.runtime.errors import InvalidArgument

LIMIT, POOL = 1_000_000, 8_000_000

LIST_BUILDERS = [
    # the two, and their quoted and re-cased forms
    "RETURN size(`range`(1, 20000000)) AS n",
    "RETURN size(`RANGE`(1, 20000000)) AS n",
    "RETURN size(string_split(repeat('a,', 5000000), ',')) AS n",
    "RETURN size(`string_split`(`repeat`('a,', 5000000), ',')) AS n",
    "RETURN size(STR_SPLIT(REPEAT('a,', 5000000), ',')) AS n",
    # other builders LadybugDB offers
    "RETURN size(string_to_array(lpad('a', 5000000, ','), ',')) AS n",
    "RETURN size(regexp_split_to_array(rpad('a', 5000000, ','), ',')) AS n",
    "RETURN size(regexp_extract_all(lpad('a', 5000000, 'b'), 'b')) AS n",
    "RETURN size(repeat('ab', $n)) AS n",
    "RETURN size(range(1, $n)) AS n",
    # growth through names and operators: doubling chains, concatenation, appends
    "WITH range(1, 1000000) AS l WITH l + l AS l WITH l + l AS l RETURN size(l) AS n",
    "WITH range(1, 400000) AS l WITH list_concat(l, l) AS l WITH list_concat(l, l) AS l RETURN size(l) AS n",
    "WITH range(1, 600000) AS l RETURN size(array_concat(l, l)) AS n",
    "WITH range(1, 999999) AS l RETURN size(list_append(l, l)) AS n",
    "WITH 'abcdefghij' AS s " + "WITH s + s + s + s AS s " * 9 + "RETURN size(string_split(s, 'a'))",
    "UNWIND range(1, 1000000) AS a WITH collect(a) AS l WITH l + l AS l RETURN size(l) AS n",
    # per element: comprehensions, list_transform with a lambda, reduce, extract
    "RETURN size([x IN range(1, 1000) | range(1, 1000)]) AS n",
    "RETURN size(list_transform(range(1, 1000), x -> range(1, 1000))) AS n",
    "RETURN size(reduce(acc = [], x IN range(1, 1000) | acc + range(1, 1000))) AS n",
    # hidden in a pattern, an index, a subquery, a CASE
    "MATCH (d:Document {id: string_split(repeat('a,', 5000000), ',')[0]}) RETURN d.id",
    "WITH [1, 2] AS l RETURN l[size(range(1, 20000000))] AS n",
    "CALL { WITH range(1, 1000000) AS l WITH l + l AS l RETURN l } RETURN size(l) AS n",
    "RETURN CASE WHEN true THEN range(1, 2000000) ELSE [] END AS n",
    "RETURN size(CAST(repeat('1,', 2000000) AS STRING)) AS n",
]

ORDINARY = [
    "MATCH (d:Document) RETURN d.id AS id LIMIT $n",
    "MATCH (d:Document)-[c:COVERS]->(t:Topic) WHERE t.name STARTS WITH 'solar' "
    "RETURN d.title, collect(t.name) AS topics ORDER BY d.title DESC LIMIT 10",
    "MATCH (a:Document)-[:MENTIONS]->(e:Entity)<-[:MENTIONS]-(b:Document) WHERE a <> b "
    "RETURN a.id, b.id, count(e) AS shared ORDER BY shared DESC",
    "UNWIND range(1, 10) AS x RETURN x * 2 AS y",
    "OPTIONAL MATCH (d:Document) WHERE d.title IS NOT NULL AND d.title CONTAINS 'x' RETURN count(*)",
    "MATCH p = (a:Document)-[*1..2]-(b) RETURN nodes(p), length(p) LIMIT 5",
    "WITH [1, 2, 3] AS l RETURN l[1] AS first, size(l) AS n",
    "MATCH (e:Entity) RETURN e.name, CASE WHEN e.type = 'PERSON' THEN 'p' ELSE 'o' END AS kind",
    "CALL show_tables() RETURN *",
    "MATCH (d:Document) WHERE EXISTS { MATCH (d)-[:COVERS]->(:Topic) } RETURN d.id",
    "RETURN list_transform(range(1, 100), x -> x * x) AS squares",
    "RETURN string_split('a,b,c', ',') AS parts, repeat('-', 40) AS rule",
]


@pytest.mark.parametrize("cypher", LIST_BUILDERS)
def test_every_list_builder_is_bounded_whatever_its_quoting(cypher) -> None:
    with pytest.raises(InvalidArgument) as refused:
        check_value_sizes(cypher, {"n": 10**7}, LIMIT, POOL)
    assert refused.value.reason == "QUERY_TOO_LARGE"
    assert "could build" in refused.value.message or "bounds" in refused.value.message


@pytest.mark.parametrize("cypher", ORDINARY)
def test_ordinary_queries_pass(cypher) -> None:
    assert check_value_sizes(cypher, {"n": 10}, LIMIT, POOL) <= LIMIT


@pytest.mark.parametrize("cypher", [  # Cypher that LadybugDB's dialect lacks, still parsed (Neo4j runs it)
    "WITH [1, 2, 3] AS l RETURN l[0], l[1..2], size(l)",
    "RETURN [x IN range(1, 100) WHERE x % 2 = 0 | x * x] AS squares",
])
def test_other_dialects_parse_too(cypher) -> None:
    assert check_value_sizes(cypher, {}, LIMIT, POOL) <= 10_000


def test_the_bound_follows_the_arguments() -> None:
    assert check_value_sizes("RETURN range(1, 1000) AS r", {}, LIMIT, POOL) == 1000
    assert check_value_sizes("RETURN repeat('ab', $n) AS r", {"n": 300}, LIMIT, POOL) == 600
    assert check_value_sizes("WITH range(1, 1000) AS l WITH l + l AS l RETURN l + l AS l", {}, LIMIT, POOL) == 4000


async def test_queries_running_past_the_memory_ceiling_are_interrupted(tmp_path) -> None:
    # A ceiling of 1 MB over what the process held when the store opened: sorting 10^8 rows passes it at once.
    settings = GraphSettings(query_memory_mb=1, query_timeout_s=30, query_max_range_items=10**9)
    store = LadybugGraphStore(tmp_path / "ladybug", settings)
    try:
        graph = KnowledgeGraph(store, settings)
        with pytest.raises(InvalidArgument) as refused:
            await graph.query("acme", "UNWIND range(1, 1000) AS a UNWIND range(1, 1000) AS b "
                                      "UNWIND range(1, 100) AS c RETURN a * b * c AS n ORDER BY n DESC LIMIT 1", {})
        assert refused.value.reason == "QUERY_TOO_LARGE" and "memory ceiling" in refused.value.message
    finally:
        await store.close()
