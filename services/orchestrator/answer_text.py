"""Plain-language answers composed from tool results (the offline agent's final step).

Deterministic on purpose: the offline model would paraphrase tool output unreliably, so the
answer states what each tool returned, with document names and scores where there are any.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

SNIPPET_CHARS = 160
MAX_ITEMS = 5


class ToolOutput(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def is_error(self) -> bool: ...
    @property
    def output(self) -> str: ...
    @property
    def result(self) -> Any: ...


def _entities(data: Mapping[str, Any]) -> str:
    items = data.get("entities") or []
    if not items:
        return "No named entities found."
    shown = ", ".join(f"{e.get('text')} ({e.get('label')}, x{int(e.get('count') or 1)})" for e in items[:10])
    more = f" and {len(items) - 10} more" if len(items) > 10 else ""
    return f"Entities: {shown}{more}."


def _sentiment(data: Mapping[str, Any]) -> str:
    overall = data.get("overall") or {}
    label = str(overall.get("label") or "unknown").removeprefix("SENTIMENT_LABEL_").lower()
    return f"Sentiment: {label} (score {float(overall.get('score') or 0):.2f})."


def _statistics(data: Mapping[str, Any]) -> str:
    keywords = ", ".join(k["keyword"] for k in (data.get("top_keywords") or [])[:MAX_ITEMS])
    return (
        f"{data.get('words')} words, {data.get('sentences')} sentences, {data.get('paragraphs')} paragraphs;"
        f" about {data.get('reading_time_minutes')} min to read; Flesch reading ease"
        f" {data.get('flesch_reading_ease')}" + (f"; top keywords: {keywords}." if keywords else ".")
    )


def _passages(data: Mapping[str, Any]) -> str:
    results = data.get("results") or []
    if not results:
        return "No matching passages in the stored documents."
    lines = []
    for n, hit in enumerate(results[:MAX_ITEMS], start=1):
        where = hit.get("provenance") or {}
        name = where.get("filename") or where.get("document_id") or "document"
        page = f" p.{where['page']}" if where.get("page") else ""
        snippet = " ".join(str(hit.get("text") or "").split())[:SNIPPET_CHARS]
        lines.append(f"[{n}] {name}{page} (score {float(hit.get('score') or 0):.3f}): {snippet}")
    return "Top passages:\n" + "\n".join(lines)


def _graph(data: Mapping[str, Any]) -> str:
    rows = data.get("rows") or []
    if not rows:
        return "The knowledge graph has no matching topics or entities."
    shown = "; ".join(", ".join(f"{k}={v}" for k, v in row.items()) for row in rows[:MAX_ITEMS])
    return f"Knowledge graph ({len(rows)} rows): {shown}"


_FORMATTERS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "extract_entities": _entities,
    "python_sentiment": _sentiment,
    "analyze_document_text": _statistics,
    "rag_search": _passages,
    "vector_search": _passages,
    "knowledge_graph_query": _graph,
}


def describe(record: ToolOutput) -> str:
    if record.is_error:
        return f"{record.name} failed: {record.output}"
    formatter = _FORMATTERS.get(record.name)
    if formatter is not None and isinstance(record.result, Mapping):
        return formatter(record.result)
    text = record.output if isinstance(record.result, str) else json.dumps(record.result, default=str)
    return f"{record.name}: {text[:1000]}"


def compose_answer(records: Sequence[ToolOutput]) -> str:
    if not records:
        return "No tool was run."
    return "\n\n".join(describe(r) for r in records)
