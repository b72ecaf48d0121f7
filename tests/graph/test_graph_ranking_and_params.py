"""Related-document ranking, query parameters (Struct -> typed), tenant database names, result JSON."""

from __future__ import annotations

import datetime as dt

import pytest
from google.protobuf import json_format, struct_pb2

from services.graph.query_params import from_struct, struct_row, validate_params
from services.graph.related import assemble, entity_share
from services.graph.tenancy import database_name
from services.graph.values import to_json
from services.runtime.errors import InvalidArgument


def test_assemble_orders_by_rounded_score_then_id_and_names_shared_items():
    scored = [
        {"id": "b", "title": "B", "score": 0.9},
        {"id": "c", "title": None, "score": 0.5 + 0.5 + 2 / 3},
        {"id": "z", "title": "Z", "score": 0.1 + 0.2},  # 0.30000000000000004: ties with "a" once rounded
        {"id": "a", "title": "A", "score": 0.3},
    ]
    shared = [
        {"id": "c", "name": "Graphs", "topic": True},
        {"id": "c", "name": "Apple", "topic": False},
        {"id": "c", "name": "Ada", "topic": False},
        {"id": "b", "name": "AI", "topic": True},
        {"id": "a", "name": "AI", "topic": True},
    ]
    ranked = assemble(scored, shared, limit=10)
    assert [(r.document_id, r.score) for r in ranked] == [("c", 1.666667), ("b", 0.9), ("a", 0.3), ("z", 0.3)]
    assert (ranked[0].title, ranked[0].shared_topics, ranked[0].shared_entities) == ("", ("Graphs",), ("Ada", "Apple"))
    assert ranked[3].shared_topics == ()
    assert [r.document_id for r in assemble(scored, shared, limit=1)] == ["c"]


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
    assert params == {
        "n": 5, "f": 2.5, "big": float(2**60), "s": "x", "b": True, "none": None, "xs": [1, 2.5, "a"], "m": {"k": 3}
    }
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
