"""Uploads with one rich progress bar per file, fed by the SSE stages of ``POST /v1/documents``."""

from __future__ import annotations

import pathlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from docuthinker_cli.client import Gateway, GatewayError
from docuthinker_cli.exit_codes import ExitCode

# Where each stage puts the bar (0-100); OCR and EMBEDDED move within their band by done/total.
_BANDS = {
    "INGEST_STAGE_RECEIVED": (5, 5), "INGEST_STAGE_OCR": (5, 30), "INGEST_STAGE_PARSED": (30, 30),
    "INGEST_STAGE_CHUNKED": (40, 40), "INGEST_STAGE_EMBEDDED": (40, 90), "INGEST_STAGE_INDEXED": (95, 95),
    "INGEST_STAGE_GRAPH_SYNCED": (100, 100),
}
_GRAPH_DONE = {"GRAPH_SYNC_STATUS_SYNCED", "GRAPH_SYNC_STATUS_DISABLED"}


def percent(progress: dict[str, Any]) -> tuple[float, str]:
    """The bar position and the label of one progress event (int64 counts arrive as JSON strings)."""
    stage = progress.get("stage", "")
    low, high = _BANDS.get(stage, (0, 0))
    done, total = int(progress.get("done", 0) or 0), int(progress.get("total", 0) or 0)
    position = low + (high - low) * (done / total) if total and high > low else high
    label = stage.removeprefix("INGEST_STAGE_").lower().replace("_", " ")
    if total and stage in ("INGEST_STAGE_OCR", "INGEST_STAGE_EMBEDDED"):
        label += f" {done}/{total}"
    return position, label


@dataclass
class Outcome:
    file: str
    document: dict[str, Any] | None = None
    duplicate: bool = False
    error: GatewayError | None = None
    stages: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"file": self.file, "stages": self.stages}
        if self.error is not None:
            body.update(self.error.as_json())
        else:
            body.update({"document": self.document, "duplicate": self.duplicate})
        return body


# What a folder upload takes (the types the gateway parses); named files are sent whatever their type.
UPLOADABLE = frozenset(
    """.pdf .docx .xlsx .xls .csv .tsv .pptx .odt .ods .epub .eml .rtf .html .htm .md .markdown .txt .text .json
    .xml .png .jpg .jpeg .tif .tiff .webp .bmp .gif .mp3 .wav .m4a .ogg .oga .opus .flac .webm .mp4 .mov .mkv""".split()
)


def expand(paths: list[pathlib.Path]) -> list[pathlib.Path]:
    """Files as given; a folder as the files under it that the gateway parses (hidden ones left out), sorted."""
    files: list[pathlib.Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(
                f for f in path.rglob("*")
                if f.is_file() and f.suffix.lower() in UPLOADABLE
                and not any(part.startswith(".") for part in f.relative_to(path).parts)))
        else:
            files.append(path)
    return list(dict.fromkeys(files))


def upload_all(connect: Callable[[], Gateway], paths: list[pathlib.Path], console: Console, *, wait_graph: bool,
               wait_timeout_s: float, parallel: int = 2) -> list[Outcome]:
    """Uploads ``parallel`` files at a time (each over its own connection), each with its own bar; the
    outcomes come back in the order of ``paths``."""
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
               TextColumn("{task.fields[stage]}"), TimeElapsedColumn())
    local = threading.local()

    def gateway() -> Gateway:
        if not hasattr(local, "gateway"):
            local.gateway = connect()
            opened.append(local.gateway)
        return local.gateway

    opened: list[Gateway] = []
    with Progress(*columns, console=console, transient=False) as bars:
        tasks = {path: bars.add_task(escape(path.name), total=100, stage="waiting") for path in paths}
        try:
            with ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="upload") as pool:
                return list(pool.map(
                    lambda path: _upload(gateway(), path, bars, tasks[path], wait_graph, wait_timeout_s), paths))
        finally:
            for client in opened:
                client.close()


def _upload(gateway: Gateway, path: pathlib.Path, bars: Progress, task: TaskID, wait_graph: bool,
            wait_timeout_s: float) -> Outcome:
    outcome = Outcome(str(path))
    if not path.is_file():
        outcome.error = GatewayError(f"{path}: no such file", ExitCode.NOT_FOUND)
        bars.update(task, stage="[red]no such file[/]")
        return outcome
    try:
        for event in gateway.upload(path):
            if "progress" in event:
                position, label = percent(event["progress"])
                outcome.stages.append(event["progress"].get("stage", ""))
                bars.update(task, completed=position, stage=label)
            elif "done" in event:
                outcome.document = event["done"].get("document", {})
                outcome.duplicate = bool(event["done"].get("duplicate", False))
        if outcome.document is None:
            raise GatewayError(f"{path.name}: the upload stream ended without a result", ExitCode.ERROR)
        if wait_graph:
            bars.update(task, completed=97, stage="graph sync")
            outcome.document = _wait_for_graph(gateway, outcome.document, wait_timeout_s)
        bars.update(task, completed=100, stage="[green]duplicate[/]" if outcome.duplicate else "[green]ready[/]")
    except GatewayError as exc:
        outcome.error = exc
        bars.update(task, stage=f"[red]failed: {escape(str(exc))}[/]")
    return outcome


def _wait_for_graph(gateway: Gateway, document: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while document.get("graph_sync") not in _GRAPH_DONE:
        if time.monotonic() > deadline:
            raise GatewayError(f"{document.get('filename')}: not in the knowledge graph after {timeout_s:.0f} s "
                               f"(graph sync {document.get('graph_sync')})", ExitCode.UNAVAILABLE)
        time.sleep(0.5)
        document = gateway.document(document["document_id"])
    return document
