"""Caller-controlled query costs are bounded: range() sizes before the query runs, engine memory and time while it runs."""

from __future__ import annotations

import asyncio

import pytest

from services.graph.knowledge_graph import KnowledgeGraph
from services.graph.ladybug_store import LadybugGraphStore
from services.graph.query_cost import check_generated_items
from services.graph.settings import GraphSettings
from services.runtime.errors import DeadlineExceeded, InvalidArgument


@pytest.mark.parametrize(
    ("cypher", "params", "items"),
    [
        ("UNWIND range(1, 10) AS x RETURN x", {}, 10),
        ("UNWIND range(0, 100, 10) AS x RETURN x", {}, 11),
        ("UNWIND range(10, 1, -1) AS x RETURN x", {}, 10),
        ("UNWIND range(5, 1) AS x RETURN x", {}, 1),  # empty ranges count as one (they multiply nothing away)
        ("UNWIND range(1, $n) AS x RETURN x", {"n": 500}, 500),
        ("UNWIND RANGE(1, 100) AS a UNWIND range(1, 100) AS b RETURN a, b", {}, 10_000),
        ("MATCH (d:Document) RETURN d.range AS r, 'range(1, 1e12)' AS s", {}, 0),
        ("RETURN range(0x10, 0x1f) AS hex", {}, 16),
    ],
)
def test_range_sizes_are_counted(cypher, params, items):
    assert check_generated_items(cypher, params, 1_000_000) == items


@pytest.mark.parametrize(
    ("cypher", "params", "says"),
    [
        ("UNWIND range(1, 1e9) AS x RETURN sum(x)", {}, "1,000,000,000 items"),
        ("UNWIND range(1, $n) AS x RETURN x", {"n": 10**7}, "10,000,000 items"),
        ("UNWIND range(1, 2000) AS a UNWIND range(1, 2000) AS b RETURN sum(a * b)", {}, "4,000,000 items"),
        ("RETURN [x IN range(1, 1000) | range(1, 10000)] AS nested", {}, "10,000,000 items"),
        ("UNWIND range(1, 10^9) AS x RETURN x", {}, "integer literals or parameters"),
        ("UNWIND range(1, toInteger('100000000000')) AS x RETURN x", {}, "integer literals or parameters"),
        ("UNWIND range(1, $n) AS x RETURN x", {"n": "9"}, "must be an integer parameter"),
        ("UNWIND range(1, 10, 0) AS x RETURN x", {}, "step must not be 0"),
        ("UNWIND range(1) AS x RETURN x", {}, "takes a start, an end"),
        ("UNWIND range(1, 2.5) AS x RETURN x", {}, "not an integer"),
    ],
)
def test_oversized_or_unbounded_ranges_are_refused(cypher, params, says):
    with pytest.raises(InvalidArgument) as refused:
        check_generated_items(cypher, params, 1_000_000)
    assert refused.value.reason == "QUERY_TOO_LARGE"
    assert says in str(refused.value)


@pytest.fixture
async def ladybug(tmp_path):
    store = LadybugGraphStore(tmp_path / "ladybug", GraphSettings())
    try:
        yield store
    finally:
        await store.close()


async def test_the_oom_query_is_refused_before_it_runs(ladybug, as_tenant):
    graph = KnowledgeGraph(ladybug, GraphSettings())
    with as_tenant("acme"):
        with pytest.raises(InvalidArgument) as refused:
            await graph.query("acme", "UNWIND range(1, 1e9) AS x RETURN sum(x) AS s", {})
        assert refused.value.reason == "QUERY_TOO_LARGE"
        assert (await graph.query("acme", "UNWIND range(1, 1000) AS x RETURN sum(x) AS s", {})).rows == ({"s": 500500},)


async def test_a_query_that_fills_the_buffer_pool_fails_alone(ladybug, as_tenant):
    graph = KnowledgeGraph(ladybug, GraphSettings())
    with as_tenant("acme"):
        with pytest.raises(InvalidArgument) as refused:
            # 10^6 strings of 1,000 characters: about 1 GB, far past the 64 MB pool
            await graph.query(
                "acme", "UNWIND range(1, 1000) AS a UNWIND range(1, 1000) AS b RETURN size(collect(repeat('x', 1000))) AS n", {}
            )
        assert refused.value.reason == "QUERY_TOO_LARGE"
        assert (await graph.query("acme", "RETURN 1 AS one", {})).rows == ({"one": 1},)


async def test_slow_queries_end_at_their_deadline_and_leave_room_for_others(tmp_path, as_tenant):
    settings = GraphSettings(query_timeout_s=0.3, query_max_range_items=10**12, query_concurrency=2)
    store = LadybugGraphStore(tmp_path / "ladybug", settings)
    graph = KnowledgeGraph(store, settings)
    slow = "UNWIND range(1, 1000000) AS a UNWIND range(1, 1000000) AS b RETURN sum(a * b) AS s"
    try:
        with as_tenant("acme"):
            outcomes = await asyncio.gather(*(graph.query("acme", slow, {}) for _ in range(3)), return_exceptions=True)
            assert all(isinstance(o, DeadlineExceeded) for o in outcomes), outcomes
            # once the engine has let go of the slow ones, a quick query runs as usual
            assert (await graph.query("acme", "RETURN 2 AS two", {})).rows == ({"two": 2},)
    finally:
        await store.close()
