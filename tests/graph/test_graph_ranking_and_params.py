"""Related-document ranking, query parameters (Struct -> typed), tenant database names, result JSON."""

from __future__ import annotations

import datetime as dt

import pytest
from google.protobuf import json_format, struct_pb2

from services.graph.query_params import from_struct, struct_row, validate_params
from services.graph.related import entity_share, rank
from services.graph.store import SharedFact
from services.graph.tenancy import database_name
from services.graph.values import to_json
from services.runtime.errors import InvalidArgument


def test_rank_sums_min_weights_and_damped_entity_mentions():
    facts = [
        SharedFact("b", "B", "topic", "AI", 0.8, 0.4),
        SharedFact("b", "B", "entity", "Apple", 5, 1),
        SharedFact("c", "C", "topic", "Graphs", 0.5, 0.7),
        SharedFact("c", "C", "entity", "Ada", 1, 4),
        SharedFact("c", "C", "entity", "Apple", 5, 2),
        SharedFact("a", "A", "topic", "AI", 0.4, 0.4),
    ]
    ranked = rank(facts, limit=10)
    assert [(r.document_id, r.score) for r in ranked] == [("c", round(0.5 + 0.5 + 2 / 3, 6)), ("b", 0.9), ("a", 0.4)]
    assert ranked[0].shared_entities == ("Ada", "Apple")
    assert [r.document_id for r in rank(facts, limit=1)] == ["c"]


def test_equal_scores_break_ties_by_document_id():
    facts = [SharedFact(d, d, "topic", "t", 0.1 + 0.2, 0.3) for d in ("z", "m", "a")]
    assert [r.document_id for r in rank(facts, 10)] == ["a", "m", "z"]


def test_entity_share_is_bounded():
    assert entity_share(1, 1) == 0.5
    assert entity_share(100, 1000) < 1.0
    assert entity_share(0, 3) == 0.0


def test_struct_params_become_typed_values():
    struct = json_format.ParseDict(
        {"n": 5, "f": 2.5, "big": 2**60, "s": "x", "b": True, "none": None, "xs": [1, 2.5, "a"], "m": {"k": 3}},
        struct_pb2.Struct(),
    )
    params = from_struct(struct)
    assert params == {"n": 5, "f": 2.5, "big": float(2**60), "s": "x", "b": True, "none": None, "xs": [1, 2.5, "a"], "m": {"k": 3}}
    assert isinstance(params["n"], int) and isinstance(params["m"]["k"], int)


def test_param_names_are_validated_and_tenant_is_reserved():
    assert validate_params({"id": "x"}, {"id"}) == {"id": "x"}
    with pytest.raises(InvalidArgument) as bad:
        validate_params({"tenant": "other", "1x": 1, "ok": 2}, {"ok", "missing"})
    fields = {v.field for v in bad.value.violations}
    assert fields == {"params.tenant", "params.1x", "params.missing"}


def test_result_rows_are_json():
    row = struct_row({"d": to_json(dt.date(2024, 5, 17), lambda v: None), "big": to_json(2**60, lambda v: None),
                      "nested": to_json({"xs": (1, 2)}, lambda v: None)})
    assert json_format.MessageToDict(row) == {"d": "2024-05-17", "big": str(2**60), "nested": {"xs": [1.0, 2.0]}}


def test_tenant_database_names_are_distinct_and_valid():
    tenants = ["acme", "ACME", "Acme_EU", "acme-eu", "acme.eu", "a" * 64, "9lives"]
    names = [database_name(t) for t in tenants]
    assert len(set(names)) == len(names)
    for name in names:
        assert 3 <= len(name) <= 63 and name[0].isalpha()
        assert set(name) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")
    assert database_name("acme") == database_name("acme")
