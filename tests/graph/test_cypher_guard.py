"""The read-only guard on tokens: hostile Cypher refused, honest Cypher (keywords in literals) accepted."""

from __future__ import annotations

import pytest

from services.graph.cypher_guard import check_read_only
from services.graph.cypher_lexer import Kind, LexError, tokenize
from services.runtime.errors import InvalidArgument

HOSTILE = {
    "create": "CREATE (n:Topic {name: 'x'})",
    "create after match": "MATCH (d:Document) CREATE (d)-[:COVERS]->(:Topic {name: 'x'})",
    "merge": "MERGE (t:Topic {key: 'x'}) RETURN t",
    "delete": "MATCH (n) DELETE n",
    "detach delete": "MATCH (n) DETACH DELETE n",
    "set": "MATCH (d:Document) SET d.title = 'owned' RETURN d",
    "remove": "MATCH (d:Document) REMOVE d.title RETURN d",
    "drop": "DROP CONSTRAINT docuthinker_document_key",
    "foreach": "MATCH p = (a)-->(b) FOREACH (n IN nodes(p) | SET n.x = 1)",
    "load csv": "LOAD CSV FROM 'file:///etc/passwd' AS line RETURN line",
    "load csv later": "WITH 1 AS x LOAD CSV FROM 'https://evil.example/x.csv' AS line RETURN line",
    "ladybug load from": "LOAD FROM '/etc/passwd' (header = false) RETURN *",
    "ladybug copy": "COPY Document FROM '/tmp/evil.csv'",
    "ladybug attach": "ATTACH '/tmp/other.lbug' AS other",
    "call dbms": "CALL dbms.components()",
    "call dbms yield": "CALL dbms.security.listUsers() YIELD username RETURN username",
    "call apoc write": "CALL apoc.create.node(['X'], {}) YIELD node RETURN node",
    "call apoc read": "CALL apoc.meta.schema()",
    "call db other": "CALL db.index.fulltext.queryNodes('idx', 'x')",
    "apoc function": "RETURN apoc.cypher.runFirstColumnSingle('MATCH (n) DETACH DELETE n', {}) AS x",
    "apoc function spaced": "RETURN apoc . text . join(['a'], ',') AS x",
    "two statements": "MATCH (n) RETURN n; MATCH (n) DETACH DELETE n",
    "two reads": "RETURN 1; RETURN 2",
    "use other database": "USE `dt-other-tenant` MATCH (n) RETURN n",
    "use in subquery": "CALL { USE system RETURN 1 AS x } RETURN x",
    "in transactions": "UNWIND range(1, 3) AS i CALL { WITH i RETURN i AS j } IN TRANSACTIONS RETURN j",
    "periodic commit": "USING PERIODIC COMMIT LOAD CSV FROM 'x' AS l RETURN l",
    "show": "SHOW DATABASES",
    "admin": "ALTER USER neo4j SET PASSWORD 'x'",
    "insert (gql)": "INSERT (:Topic {name: 'x'})",
    "comment hides nothing": "MATCH (n) /* harmless */ DETACH /* really */ DELETE n",
    "line comment ended by CR": "MATCH (n) // comment\rDETACH DELETE n",
    "line comment ended by U+2028": "MATCH (n) // comment\u2028DELETE n",
    "lower case": "match (n) detach delete n",
    "mixed case": "MaTcH (n) DeLeTe n",
    "write hidden behind escape ambiguity": "MATCH (n) WHERE n.name = 'a\\' DETACH DELETE n //' RETURN n",
    "zero-width joiner": "MATCH (n) RETURN n\u200b",
    "backslash outside string": "MATCH (n) RETURN n \\u0043REATE",
    "not a read clause": "PROFILE CREATE (n)",
    "does not start with a read": "FINISH",
    "unterminated string": "MATCH (n) WHERE n.name = 'abc RETURN n",
    "unterminated comment": "MATCH (n) /* RETURN n",
    "empty": "   ",
    "only a comment": "// nothing",
}

HONEST = {
    "keyword in single quotes": "MATCH (d:Document) WHERE d.title = 'create' RETURN d.id",
    "keywords in double quotes": 'MATCH (d:Document) WHERE d.title CONTAINS "DETACH DELETE; DROP" RETURN d.id',
    "keyword in backticks": "MATCH (d:Document) RETURN d.title AS `CREATE`",
    "keyword in comment": "MATCH (d:Document) // never CREATE or DELETE here\nRETURN d.id",
    "keyword in block comment": "MATCH (d:Document) /* SET d.x = 1; */ RETURN d.id",
    "semicolon in string": "RETURN 'a; b' AS s",
    "escaped quote": "MATCH (d:Document) WHERE d.title = 'O\\'Brien' RETURN d.id",
    "trailing semicolon": "MATCH (d:Document) RETURN count(d) AS n;",
    "2-hop": "MATCH (d:Document {id: $id})-[:COVERS]->(t:Topic)<-[:COVERS]-(o:Document) WHERE o <> d RETURN o.id",
    "optional match and aggregation": "MATCH (t:Topic) OPTIONAL MATCH (t)<-[c:COVERS]-() RETURN t.name, count(c) AS n",
    "unwind": "UNWIND $ids AS id MATCH (d:Document {id: id}) RETURN d",
    "with and order": "MATCH (d:Document) WITH d ORDER BY d.id LIMIT 5 RETURN d.id",
    "call subquery": "MATCH (d:Document) CALL { WITH d MATCH (d)-[:COVERS]->(t) RETURN count(t) AS n } RETURN d.id, n",
    "allowed procedure": "CALL db.labels() YIELD label RETURN label",
    "ladybug schema": "CALL show_tables() RETURN *",
    "temporal function": "RETURN date.truncate('month', date('2024-05-17')) AS d",
    "exists subquery": "MATCH (t:Topic) WHERE NOT EXISTS { MATCH (t)<-[:COVERS]-() } RETURN t",
    "union": "MATCH (t:Topic) RETURN t.name AS name UNION MATCH (e:Entity) RETURN e.name AS name",
    "property named like keyword prefix": "MATCH (d:Document) RETURN d.created_at, d.settings, d.deleted_flag",
    "explain": "EXPLAIN MATCH (n) RETURN n",
    "map projection": "MATCH (d:Document) RETURN d {.id, .title} AS doc",
}


@pytest.mark.parametrize("cypher", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_cypher_is_refused_with_a_field_violation(cypher):
    with pytest.raises(InvalidArgument) as refused:
        check_read_only(cypher)
    assert refused.value.violations[0].field == "cypher"
    assert refused.value.code.name == "INVALID_ARGUMENT"


@pytest.mark.parametrize("cypher", HONEST.values(), ids=HONEST.keys())
def test_honest_cypher_passes(cypher):
    checked = check_read_only(cypher)
    assert checked.cypher.rstrip(";").strip() == cypher.rstrip(";").strip()


def test_reasons_say_what_was_wrong():
    with pytest.raises(InvalidArgument) as multi:
        check_read_only("RETURN 1; RETURN 2")
    assert multi.value.reason == "CYPHER_MULTIPLE_STATEMENTS"
    with pytest.raises(InvalidArgument) as write:
        check_read_only("MATCH (n) DETACH DELETE n")
    assert write.value.reason == "CYPHER_NOT_READ_ONLY"
    assert "DETACH" in write.value.violations[0].description
    with pytest.raises(InvalidArgument) as call:
        check_read_only("CALL dbms.components()")
    assert "dbms.components" in call.value.violations[0].description


def test_trailing_semicolon_is_dropped_and_parameters_are_collected():
    checked = check_read_only("MATCH (d:Document {id: $id}) WHERE d.title IN $`odd name` RETURN d LIMIT $n ;")
    assert checked.parameters == frozenset({"id", "odd name", "n"})
    assert ";" not in checked.cypher


def test_parameter_inside_a_string_is_not_a_parameter():
    assert check_read_only("RETURN '$notaparam' AS s").parameters == frozenset()


def test_too_long_is_refused():
    with pytest.raises(InvalidArgument) as refused:
        check_read_only("RETURN 1" + " " * 200, max_chars=100)
    assert refused.value.reason == "CYPHER_TOO_LONG"


def test_lexer_kinds():
    tokens = tokenize("MATCH (n:`My Label`) WHERE n.x = 'it''s' AND n.y = $p // c\nRETURN 1.5e3")
    kinds = [(t.kind, t.text) for t in tokens]
    assert (Kind.QUOTED, "My Label") in kinds
    assert (Kind.PARAMETER, "p") in kinds
    assert (Kind.NUMBER, "1.5e3") in kinds
    assert all(t.text != "c" for t in tokens)  # the comment is gone
    assert [t.text for t in tokens if t.kind is Kind.STRING] == ["'it'", "'s'"]


def test_lexer_doubled_backtick_and_unterminated():
    (token,) = tokenize("`a``b`")
    assert (token.kind, token.text) == (Kind.QUOTED, "a`b")
    with pytest.raises(LexError):
        tokenize("`open")
    with pytest.raises(LexError):
        tokenize("RETURN $")
