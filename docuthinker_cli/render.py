"""What the commands print: rich tables and text for people, plain JSON (``--json``) for scripts."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def emit_json(value: Any) -> None:
    """JSON on stdout, unstyled and unwrapped, so ``| jq`` always works."""
    print(json.dumps(value, indent=2, ensure_ascii=False), flush=True)


def error(message: str) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}")


def _short(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _status(value: str, prefix: str) -> str:
    return value.removeprefix(prefix).lower() if value else ""


SHORT_ID = 12
"""Characters of an id shown in tables: enough to name it (any unique start does, as does the name)."""


def documents(docs: list[dict[str, Any]]) -> None:
    table = Table("id", "name", "type", "pages", "chunks", "status", "graph", "size", "created")
    for doc in docs:
        pages = int(doc.get("page_count", 0) or 0)
        sheets = len(doc.get("sheet_names") or [])
        table.add_row(doc.get("document_id", "")[:SHORT_ID], escape(doc.get("filename", "")), doc.get("file_type", ""),
                      str(pages) if pages else (f"{sheets} sheet{'s' * (sheets != 1)}" if sheets else "-"),
                      str(doc.get("chunk_count", 0)),
                      _status(doc.get("status", ""), "DOCUMENT_STATUS_"),
                      _status(doc.get("graph_sync", ""), "GRAPH_SYNC_STATUS_"),
                      _size(int(doc.get("size_bytes", 0) or 0)), (doc.get("create_time") or "")[:19])
    out.print(table)
    out.print(f"{len(docs)} document(s)")


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB"):
        if n < 1024:
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n:.1f} GB"


def where(citation: dict[str, Any]) -> str:
    """file, page / sheet and rows / section: where a citation or a chunk points."""
    parts = [citation.get("filename") or citation.get("document_id", "")]
    if citation.get("page"):
        parts.append(f"p. {citation['page']}")
    if citation.get("sheet_name"):
        parts.append(f"sheet {citation['sheet_name']}")
    if citation.get("row_start"):
        rows = citation["row_start"], citation.get("row_end") or citation["row_start"]
        parts.append(f"row {rows[0]}" if rows[0] == rows[1] else f"rows {rows[0]}-{rows[1]}")
    if citation.get("heading_path"):
        parts.append(" › ".join(citation["heading_path"]))
    return ", ".join(str(p) for p in parts)


def citations(items: list[dict[str, Any]]) -> None:
    if not items:
        return
    out.print("\n[bold]Citations[/]")
    for citation in items:
        out.print(f"  [cyan][{citation.get('marker', '?')}][/] {escape(where(citation))}: "
                  f"[dim]“{escape(_short(citation.get('excerpt', ''), 240))}”[/]")


def answer_footer(answer: dict[str, Any]) -> None:
    status = _status(answer.get("support_status", ""), "SUPPORT_STATUS_")
    note = answer.get("confidence_note", "")
    out.print(f"\n[dim]support: {status}{' — ' + escape(note) if note else ''}[/]")
    citations(answer.get("citations", []))


def delta(text: str) -> None:
    out.print(text, end="", markup=False)


def agent_step(node: dict[str, Any]) -> None:
    step = node.get("step", {})
    err.print(f"[dim]› {step.get('node', '?')} ({float(step.get('duration_ms', 0)):.0f} ms): "
              f"{escape(_short(step.get('summary', ''), 120))}[/]")


def search(results: list[dict[str, Any]]) -> None:
    table = Table("#", "score", "where", "text")
    for rank, chunk in enumerate(results, 1):
        table.add_row(str(rank), f"{float(chunk.get('score', 0)):.3f}", escape(where(chunk.get("provenance", {}))),
                      escape(_short(chunk.get("text", ""))))
    out.print(table)


def summary(body: dict[str, Any]) -> None:
    if body.get("bullets"):
        for bullet in body["bullets"]:
            out.print(f"• {escape(bullet)}")
    else:
        out.print(escape(body.get("summary", "")))
    _engine(body)


def key_ideas(body: dict[str, Any]) -> None:
    for n, idea in enumerate(body.get("ideas", []), 1):
        out.print(f"{n}. {escape(idea)}")
    _engine(body)


def entities(body: dict[str, Any]) -> None:
    table = Table("entity", "label", "count")
    for entity in body.get("entities", []):
        table.add_row(escape(entity.get("text", "")), entity.get("label", ""), str(entity.get("count", 0)))
    out.print(table)
    _engine(body)


def sentiment(body: dict[str, Any]) -> None:
    overall = body.get("overall", {})
    out.print(f"[bold]{_status(overall.get('label', ''), 'SENTIMENT_LABEL_')}[/] "
              f"(score {float(overall.get('score', 0)):+.2f}, confidence {float(overall.get('confidence', 0)):.2f})")
    _engine(body)


def _engine(body: dict[str, Any]) -> None:
    engine = body.get("engine") or {}
    if engine:
        out.print(f"[dim]engine: {engine.get('provider', '')}/{engine.get('model', '')}[/]")


def graph_rows(body: dict[str, Any]) -> None:
    columns = body.get("columns", [])
    table = Table(*columns)
    for row in body.get("rows", []):
        table.add_row(*(escape(json.dumps(row.get(c), ensure_ascii=False)) for c in columns))
    out.print(table)
    out.print(f"{len(body.get('rows', []))} row(s){' (truncated)' if body.get('truncated') else ''}")


def health(body: dict[str, Any]) -> None:
    table = Table("service", "status", "address", "latency ms", "detail")
    for service in body.get("services", []):
        colour = "green" if service.get("status") == "SERVING" else "red"
        table.add_row(service.get("name", ""), f"[{colour}]{service.get('status', '')}[/]", service.get("address", ""),
                      f"{float(service.get('latency_ms', 0)):.1f}", escape(service.get("detail", "")))
    out.print(table)
    out.print(f"mesh: [bold]{body.get('status', '')}[/]")


def costs(body: dict[str, Any]) -> None:
    table = Table("provider", "requests", "cost (USD)")
    for name, bucket in sorted((body.get("by_provider") or {}).items()):
        table.add_row(name, str(bucket.get("requests", 0)), f"{float(bucket.get('cost', 0)):.4f}")
    out.print(table)
    out.print(f"total: ${float(body.get('total_cost', 0)):.4f} over {body.get('total_requests', 0)} request(s); "
              f"today ${float(body.get('daily_spent', 0)):.4f} of ${float(body.get('daily_budget', 0)):.2f}, "
              f"this month ${float(body.get('monthly_spent', 0)):.4f} of ${float(body.get('monthly_budget', 0)):.2f}"
              + (" [bold red](budget warning)[/]" if body.get("warning") else ""))


def conversations(items: list[dict[str, Any]]) -> None:
    table = Table("id", "title", "turns", "updated")
    for item in items:
        table.add_row(item.get("conversation_id", "")[:SHORT_ID], escape(item.get("title", "") or "(untitled)"),
                      str(item.get("turn_count", 0)), (item.get("update_time") or "")[:19].replace("T", " "))
    out.print(table)
    out.print(f"{len(items)} conversation(s)")


def resolved(event: dict[str, Any]) -> None:
    """How a follow-up was read, when it was rewritten."""
    if event.get("rewritten"):
        err.print(f"[dim](read as: {escape(event.get('resolved', ''))})[/]")


def turn(item: dict[str, Any]) -> None:
    out.print(f"[bold]you>[/] {escape(item.get('question', ''))}")
    if item.get("resolved_question"):
        out.print(f"[dim](read as: {escape(item['resolved_question'])})[/]")
    answer = item.get("answer", {})
    out.print(escape(answer.get("answer", "")))
    citations(answer.get("citations", []))
    out.print("")
