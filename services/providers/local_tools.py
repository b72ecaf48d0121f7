"""Tool use for a model without native tool calling: a constrained JSON envelope.

The model is told the tools and must answer with one JSON object, either
``{"tool": name, "arguments": {...}}`` or ``{"answer": ...}``; the envelope's schema (an
``anyOf`` with one branch per tool, arguments typed by the tool's own input schema) becomes a
llama.cpp grammar, so the output always has that shape. Parsing stays defensive anyway.
Earlier tool calls and results are replayed to the model in the same envelope, as text.

The grammar's copy of each tool schema bounds its free strings (``maxLength``): at greedy
decoding a 135M model happily repeats ``query.query.query...`` until max_tokens, which
would leave the envelope unclosed. Bounded output is still valid against the tool's schema.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema

from services.providers.base import (
    ContentBlock,
    GenerationRequest,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from services.providers.json_output import extract_json

_INSTRUCTIONS = (
    "You can call one of these tools:\n{tools}\n"
    'Reply with ONE JSON object only: {{"tool": "<tool name>", "arguments": {{...}}}} to call a tool, '
    'or {{"answer": "..."}} to answer directly without a tool.'
)
MAX_STRING_CHARS = 200


def _bounded(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with ``maxLength`` on its unbounded string properties (recursively)."""
    out = dict(schema)
    if out.get("type") == "string" and "maxLength" not in out and "enum" not in out:
        out["maxLength"] = MAX_STRING_CHARS
    if isinstance(out.get("properties"), Mapping):
        out["properties"] = {k: _bounded(v) for k, v in out["properties"].items() if isinstance(v, Mapping)}
    if isinstance(out.get("items"), Mapping):
        out["items"] = _bounded(out["items"])
    return out


def tool_choice_schema(tools: Sequence[ToolSpec], answer_schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"tool": {"const": t.name}, "arguments": _bounded(t.input_schema)},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for t in tools
    ]
    branches.append(
        {
            "type": "object",
            "properties": {"answer": dict(answer_schema) if answer_schema else {"type": "string"}},
            "required": ["answer"],
            "additionalProperties": False,
        }
    )
    return {"anyOf": branches}


def _signature(schema: Mapping[str, Any]) -> str:
    """``{"query": string, "top_k": integer}``: terser than JSON schema, which a tiny model follows better."""
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, Mapping):
        return json.dumps(dict(schema))
    fields = ", ".join(f'"{name}": {spec.get("type", "any")}' for name, spec in properties.items())
    return "{" + fields + "}"


def _tool_lines(tools: Sequence[ToolSpec]) -> str:
    return "\n".join(f"- {t.name}: {t.description} Arguments: {_signature(t.input_schema)}" for t in tools)


def chat_messages(request: GenerationRequest) -> list[dict[str, str]]:
    """OpenAI-shaped chat messages (plain text) for the local model."""
    system = request.system if isinstance(request.system, str) else "\n\n".join(b.text for b in request.system)
    if request.tools:
        system = "\n\n".join(p for p in (system, _INSTRUCTIONS.format(tools=_tool_lines(request.tools))) if p)
    out = [{"role": "system", "content": system}] if system else []
    for message in request.messages:
        parts = [_as_text(b) for b in message.blocks()]
        out.append({"role": message.role, "content": "\n\n".join(p for p in parts if p)})
    return out


def _as_text(block: ContentBlock) -> str:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ToolUseBlock):
        return json.dumps({"tool": block.name, "arguments": dict(block.input)})
    assert isinstance(block, ToolResultBlock)
    status = "failed" if block.is_error else "returned"
    return f"The tool call {block.tool_use_id} {status}:\n{block.content}"


def parse_tool_choice(output: str, tools: Sequence[ToolSpec]) -> ContentBlock:
    """A ``ToolUseBlock`` when ``output`` validly calls a known tool; else the answer as text."""
    try:
        value = extract_json(output)
    except ValueError:
        return TextBlock(output.strip())
    if not isinstance(value, dict):
        return TextBlock(output.strip())
    specs = {t.name: t for t in tools}
    name = value.get("tool")
    arguments = value.get("arguments")
    if isinstance(name, str) and name in specs and isinstance(arguments, dict):
        try:
            jsonschema.validate(arguments, dict(specs[name].input_schema))
        except jsonschema.ValidationError:
            return TextBlock(output.strip())
        return ToolUseBlock(id=f"toolu_local_{uuid.uuid4().hex[:12]}", name=name, input=arguments)
    answer = value.get("answer", output)
    return TextBlock(answer if isinstance(answer, str) else json.dumps(answer))
