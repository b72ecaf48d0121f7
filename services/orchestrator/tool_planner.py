"""Deterministic tool planner for the offline agent: picks tools from the wording of the message.

The offline model (SmolLM2-135M) chooses tools poorly, so keyword rules decide first; the
model is consulted only when no rule matches. Several rules may match: their tools run in
parallel. Text tools get the document context when there is one, else the part of the
message after a colon or inside quotes, else the whole message; search tools get the
message without its leading instruction ("search for", "find").
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("extract_entities", re.compile(
        r"\b(entit(y|ies)|named|people|persons?|organi[sz]ations?|places|locations|who (is|are) mentioned)\b"),
     "text"),
    ("python_sentiment", re.compile(r"\b(sentiment|tone|positive|negative|mood|feel(s|ing)?)\b"), "text"),
    ("analyze_document_text", re.compile(
        r"\b(statistics|stats|word count|how many words|readability|reading time|how long|analytics|"
        r"analy[sz]e (this|the) (text|document))\b"), "text"),
    ("knowledge_graph_query", re.compile(
        r"\b(graph|related documents?|connected|connections?|relationships?|cypher)\b|^\s*match\s*\("), "query"),
    ("vector_search", re.compile(r"\b(similar|semantic(ally)?|vector|embedding)\b"), "query"),
    ("rag_search", re.compile(r"\b(search|find|look up|lookup|which documents?|where (is|are|does))\b"), "query"),
)
_LEADING_INSTRUCTION = re.compile(
    r"^\s*(please\s+)?(search( my documents| the documents)?( for)?|find( me)?|look ?up|show me|"
    r"do a (semantic|vector) search( for)?|query the (knowledge )?graph( for)?)\s+",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"[\"“']([^\"”']{3,})[\"”']")


@dataclass(frozen=True)
class PlannedCall:
    tool: str
    input: dict[str, Any] = field(default_factory=dict)
    rule: str = ""
    """The wording that triggered the tool."""


def text_argument(message: str, context: str) -> str:
    if context.strip():
        return context
    if ":" in message:
        tail = message.split(":", 1)[1].strip()
        if tail:
            return tail
    quoted = _QUOTED.search(message)
    if quoted:
        return quoted.group(1)
    return message


def query_argument(message: str) -> str:
    stripped = _LEADING_INSTRUCTION.sub("", message.strip())
    return stripped.rstrip("?.! ") or message


def plan_tools(message: str, context: str, available: Collection[str]) -> list[PlannedCall]:
    lowered = message.lower()
    calls: list[PlannedCall] = []
    for tool, pattern, kind in _RULES:
        if tool not in available:
            continue
        match = pattern.search(lowered)
        if not match:
            continue
        argument = {"text": text_argument(message, context)} if kind == "text" else {
            "query": query_argument(message)}
        calls.append(PlannedCall(tool, argument, match.group(0).strip()))
    # "find similar passages" is one search, not two.
    if any(c.tool == "vector_search" for c in calls):
        calls = [c for c in calls if c.tool != "rag_search"]
    return calls
