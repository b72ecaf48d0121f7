"""QueryGraph parameters: JSON (google.protobuf.Struct) in, typed Cypher parameters out.

Parameters travel to the engine as bound values, never into the query text, so no value can
change what the query does. JSON has one number type; a whole number becomes an integer (so
``LIMIT $n`` and integer comparisons work), anything else a float.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from google.protobuf import struct_pb2

from services.runtime.errors import FieldViolation, InvalidArgument

RESERVED_NAMES = frozenset({"tenant"})
"""Names the service binds itself; a caller may not supply them."""
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_MAX_SAFE_INTEGER = 2**53


def _value(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "number_value":
        number = value.number_value
        if math.isfinite(number) and number.is_integer() and abs(number) <= _MAX_SAFE_INTEGER:
            return int(number)
        return number
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return {k: _value(v) for k, v in value.struct_value.fields.items()}
    if kind == "list_value":
        return [_value(v) for v in value.list_value.values]
    return None


def from_struct(params: struct_pb2.Struct) -> dict[str, Any]:
    """A Struct's fields as typed Python values (whole numbers as int)."""
    return {name: _value(value) for name, value in params.fields.items()}


def validate_params(params: Mapping[str, Any], referenced: Iterable[str]) -> dict[str, Any]:
    """The parameters to bind; InvalidArgument for a bad, reserved or missing name."""
    violations: list[FieldViolation] = []
    for name in params:
        if not _NAME.match(name):
            violations.append(FieldViolation(f"params.{name}", "names are letters, digits and '_', not a digit first"))
        elif name.lower() in RESERVED_NAMES:
            violations.append(FieldViolation(f"params.{name}", "reserved: the service binds the caller's tenant"))
    for name in sorted(set(referenced) - set(params)):
        violations.append(FieldViolation(f"params.{name}", f"the query uses ${name} but params has no '{name}'"))
    if violations:
        raise InvalidArgument("invalid query parameters", reason="INVALID_PARAMS", violations=violations)
    return dict(params)


def struct_row(row: Mapping[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(dict(row))
    return out
