"""One JSON shape for query results, whatever the backend returned.

Nodes become ``{"labels": [...], "properties": {...}}``, relationships ``{"type": ..., "properties":
{...}}`` and paths ``{"nodes": [...], "relationships": [...]}``; backend-internal ids are left out
(they differ between engines and mean nothing to a caller). Properties that are null are left out
too: an embedded table has a column for every property, a property graph has no such property.
Temporal values become ISO-8601 strings; integers beyond 2**53 become strings, as in the
proto3 JSON mapping of int64, because a JSON number would silently lose digits.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

GraphHook = Callable[[Any], "dict[str, Any] | None"]
"""Converts a backend's graph object (node, relationship, path) to its JSON shape, or None if it is not one."""

_MAX_SAFE_INTEGER = 2**53


def node_json(labels: Iterable[str], properties: Mapping[str, Any], hook: GraphHook) -> dict[str, Any]:
    return {"labels": sorted(labels), "properties": _properties(properties, hook)}


def relationship_json(rel_type: str, properties: Mapping[str, Any], hook: GraphHook) -> dict[str, Any]:
    return {"type": rel_type, "properties": _properties(properties, hook)}


def path_json(nodes: list[dict[str, Any]], relationships: list[dict[str, Any]]) -> dict[str, Any]:
    return {"nodes": nodes, "relationships": relationships}


def _properties(properties: Mapping[str, Any], hook: GraphHook) -> dict[str, Any]:
    return {str(k): to_json(v, hook) for k, v in sorted(properties.items()) if v is not None}


def to_json(value: Any, hook: GraphHook) -> Any:
    """``value`` as plain JSON-compatible Python (dict, list, str, float/int, bool, None)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if abs(value) <= _MAX_SAFE_INTEGER else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    graph = hook(value)
    if graph is not None:
        return graph
    if isinstance(value, Mapping):
        return {str(k): to_json(v, hook) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_json(v, hook) for v in value]
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return _iso_duration(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    iso = getattr(value, "iso_format", None)  # neo4j.time types
    if callable(iso):
        return iso()
    return str(value)


def _iso_duration(delta: dt.timedelta) -> str:
    seconds = delta.total_seconds()
    sign = "-" if seconds < 0 else ""
    days, rest = divmod(abs(seconds), 86_400)
    text = f"{rest:.6f}".rstrip("0").rstrip(".")
    return f"{sign}P{int(days)}DT{text}S"
