"""Conversions between the orchestrator's domain values and protobuf well-known types."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format, struct_pb2, timestamp_pb2


def jsonable(value: Any) -> Any:
    """``value`` with every leaf a JSON type (what Struct and Value can hold)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)


def struct(data: Mapping[str, Any] | None) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    if data:
        out.update(jsonable(data))
    return out


def value(data: Any) -> struct_pb2.Value:
    out = struct_pb2.Value()
    json_format.ParseDict(jsonable(data), out)
    return out


def to_dict(message: struct_pb2.Struct) -> dict[str, Any]:
    return json_format.MessageToDict(message)


def timestamp(epoch_s: float | None) -> timestamp_pb2.Timestamp | None:
    if epoch_s is None:
        return None
    out = timestamp_pb2.Timestamp()
    out.FromNanoseconds(int(epoch_s * 1e9))
    return out
