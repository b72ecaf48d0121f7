"""A run as a file: CSV (one row per question, for a spreadsheet) or JSON (the run, its totals and every item)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from services.orchestrator.evals.records import EvalRun, ItemResult
from services.runtime.errors import FieldViolation, InvalidArgument

CSV_COLUMNS = ("position", "id", "kind", "tags", "question", "expected_answers", "expected_document", "expected_page",
               "answer", "short_answer", "support", "refused", "correct", "cited", "citations", "latency_ms", "engine",
               "error")
FORMATS = {"csv": "text/csv; charset=utf-8", "json": "application/json"}


def _location(result: ItemResult) -> str:
    return "; ".join(c.filename + (f" p{c.page}" if c.page else "") + (f" [{c.sheet_name}]" if c.sheet_name else "")
                     for c in result.citations)


def to_csv(results: Sequence[ItemResult]) -> bytes:
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for r in results:
        item = r.item
        writer.writerow([
            r.position, item.id, item.kind, ";".join(item.tags), item.question,
            "unanswerable" if not item.answerable else " | ".join(item.answers), item.document,
            item.sheet or (item.page or ""), r.answer, r.short_answer, r.support, int(r.refused), int(r.correct),
            int(r.citation_hit), _location(r), round(r.seconds * 1000, 1), r.engine, r.error,
        ])
    return out.getvalue().encode("utf-8")


def run_json(run: EvalRun, totals: Mapping[str, Any]) -> dict[str, Any]:
    return {"run_id": run.id, "set_id": run.set_id, "set_name": run.set_name, "label": run.label,
            "state": run.state, "total": run.total, "completed": run.completed, "settings": run.settings.as_json(),
            "identities": dict(run.identities), "created_at": run.created_at, "finished_at": run.finished_at,
            "error": run.error, "totals": dict(totals)}


def to_json(run: EvalRun, totals: Mapping[str, Any], results: Sequence[ItemResult]) -> bytes:
    return json.dumps({**run_json(run, totals), "items": [r.as_json() for r in results]}, indent=1).encode("utf-8")


def export(run: EvalRun, totals: Mapping[str, Any], results: Sequence[ItemResult], fmt: str) -> tuple[bytes, str]:
    """The file's bytes and content type."""
    name = (fmt or "csv").lower()
    if name not in FORMATS:
        raise InvalidArgument(f"unknown export format {fmt!r}", reason="UNKNOWN_FORMAT",
                              violations=[FieldViolation("format", "csv (default) or json")])
    data = to_csv(results) if name == "csv" else to_json(run, totals, results)
    return data, FORMATS[name]
