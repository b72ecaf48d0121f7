"""JSON-schema constrained output: schema shaping for vendors, and the one validation step.

Vendors constrain generation differently (forced tool, response_format, response schema,
grammar), and none of them is trusted: the router validates every JSON answer against the
requested schema with ``jsonschema`` and treats a failure as a bad response (failover).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import jsonschema

from services.providers.errors import bad_response

_WRAP_KEY = "value"
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def _is_object_schema(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object"


def object_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` itself when it describes an object; else an object with one ``value`` field.

    Tool inputs (Anthropic) and function parameters must be objects.
    """
    if _is_object_schema(schema):
        return dict(schema)
    return {"type": "object", "properties": {_WRAP_KEY: dict(schema)}, "required": [_WRAP_KEY]}


def unwrap(schema: Mapping[str, Any], data: Any) -> Any:
    """Undo ``object_schema``'s wrapping on a generated value."""
    if _is_object_schema(schema) or not isinstance(data, dict):
        return data
    return data.get(_WRAP_KEY, data)


def extract_json(text: str) -> Any:
    """The JSON value in ``text``, tolerating code fences and prose around one object.

    Raises ``ValueError`` when there is none.
    """
    stripped = _FENCE.sub("", text.strip())
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    start = stripped.find("{")
    if start < 0:
        raise ValueError("no JSON object in the output")
    value, _ = json.JSONDecoder().raw_decode(stripped[start:])
    return value


def validated(provider: str, text: str, schema: Mapping[str, Any]) -> Any:
    """The parsed value of ``text`` if it is valid against ``schema``; else a bad_response error."""
    try:
        value = extract_json(text)
    except ValueError as exc:
        raise bad_response(provider, f"output is not JSON: {exc}") from exc
    try:
        jsonschema.validate(value, dict(schema))
    except jsonschema.ValidationError as exc:
        raise bad_response(provider, f"output does not match the schema: {exc.message}") from exc
    return value

