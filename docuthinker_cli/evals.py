"""``docuthinker evals``: evaluation sets and runs (upload, run with a progress bar, show, compare, export)."""

from __future__ import annotations

import pathlib
import time
from typing import Annotated, Any
from urllib.parse import quote, urlencode

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from docuthinker_cli import render, runner
from docuthinker_cli.client import Gateway, GatewayError, content_type_of, error_from_response
from docuthinker_cli.exit_codes import ExitCode

app = typer.Typer(help="Evaluation sets: your questions with expected answers, run against your library.",
                  no_args_is_help=True)
Json = Annotated[bool, typer.Option("--json", help="Print the result as JSON (for scripts).")]
RUNNING = "EVAL_RUN_STATE_RUNNING"
FIGURES = (("answer_correct", "correct"), ("citation_hit", "cited"), ("answered_rate", "answered"),
           ("abstention_unanswerable", "refused (unans.)"), ("latency_p50_s", "p50 s"), ("latency_p95_s", "p95 s"))


class Evals:
    """The evaluation calls of the gateway's REST surface (through ``Gateway``'s transport and errors)."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        return self._gateway._call(method, path, **kwargs)

    def upload(self, path: pathlib.Path, name: str = "") -> dict[str, Any]:
        # Percent-encoded by hand: httpx writes a space as "+", which the gateway's transcoder keeps as "+".
        query = urlencode({"filename": path.name, **({"name": name} if name else {})}, quote_via=quote)
        return self._call("POST", f"/v1/eval-sets?{query}", content=path.read_bytes(),
                          headers={"Content-Type": content_type_of(path)})["eval_set"]

    def sets(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/eval-sets", params={"page_size": 200}).get("eval_sets", [])

    def delete_set(self, set_id: str) -> dict[str, Any]:
        return self._call("DELETE", f"/v1/eval-sets/{set_id}")

    def start(self, set_id: str, document_ids: list[str], top_k: int, agent: bool, label: str) -> dict[str, Any]:
        body = {"document_ids": document_ids, "top_k": top_k, "label": label,
                "mode": "EVAL_MODE_AGENT" if agent else "EVAL_MODE_ANSWER"}
        return self._call("POST", f"/v1/eval-sets/{set_id}/runs", json=body)["run"]

    def run(self, run_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/eval-runs/{run_id}")["run"]

    def runs(self, set_id: str = "") -> list[dict[str, Any]]:
        params: dict[str, Any] = {"page_size": 200, **({"set_id": set_id} if set_id else {})}
        return self._call("GET", "/v1/eval-runs", params=params).get("runs", [])

    def items(self, run_id: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        token = ""
        while True:
            page = self._call("GET", f"/v1/eval-runs/{run_id}/items",
                              params={"page_size": 1000, **({"page_token": token} if token else {})})
            found.extend(page.get("items", []))
            token = page.get("next_page_token", "")
            if not token:
                return found

    def cancel(self, run_id: str) -> dict[str, Any]:
        return self._call("POST", f"/v1/eval-runs/{run_id}:cancel", json={})["run"]

    def compare(self, base: str, candidate: str) -> dict[str, Any]:
        return self._call("GET", "/v1/eval-runs:compare", params={"base_run_id": base, "candidate_run_id": candidate})

    def export(self, run_id: str, fmt: str) -> bytes:
        import httpx

        try:
            response = self._gateway._http.get(f"/v1/eval-runs/{run_id}:export",
                                               params={"format": fmt}, headers={"Accept": "*/*"})
        except httpx.TransportError as exc:
            raise self._gateway._unreachable(exc) from None
        if response.status_code >= 400:
            raise error_from_response(response)
        return response.content


def _run(ctx: typer.Context, as_json: bool, action) -> None:
    runner.run(ctx, as_json, lambda gateway: action(Evals(gateway)))


def _state(run: dict[str, Any]) -> str:
    return str(run.get("state", "")).removeprefix("EVAL_RUN_STATE_").lower()


def _rate(value: Any) -> str:
    return "" if value is None else f"{float(value):.3f}"


def totals_table(run: dict[str, Any]) -> Table:
    table = Table("slice", "n", *(label for _, label in FIGURES))
    totals = run.get("totals") or {}
    rows = [("all", totals.get("overall") or {})]
    rows += [(f"kind={k}", v) for k, v in sorted((totals.get("per_kind") or {}).items())]
    rows += [(f"tag={k}", v) for k, v in sorted((totals.get("per_tag") or {}).items())]
    for name, figures in rows:
        table.add_row(escape(name), str(figures.get("items", 0)), *(_rate(figures.get(key)) for key, _ in FIGURES))
    return table


def show_run(run: dict[str, Any]) -> None:
    render.out.print(f"run {run['run_id']}  set {escape(run.get('set_name', ''))}  {_state(run)}"
                     f"  {run.get('completed', 0)}/{run.get('total', 0)}"
                     + (f"  label {escape(run['label'])}" if run.get("label") else ""), markup=True)
    settings = run.get("settings") or {}
    render.out.print(f"settings: mode {str(settings.get('mode', '')).removeprefix('EVAL_MODE_').lower()},"
                     f" top_k {settings.get('top_k', 0) or 'default'},"
                     f" documents {', '.join(settings.get('document_ids') or []) or 'all'}", markup=False)
    identities = run.get("identities") or {}
    render.out.print(f"embedder {identities.get('embedder', '')}; engines "
                     f"{', '.join(identities.get('answer_engines') or []) or '-'}", markup=False)
    if run.get("error"):
        render.error(run["error"])
    render.out.print(totals_table(run))


@app.command("upload")
def upload(ctx: typer.Context, file: Annotated[pathlib.Path, typer.Argument(help="A CSV or JSON set (docs/evaluation.md).",
                                                                            exists=True, dir_okay=False)],
           name: Annotated[str, typer.Option(help="The set's name (default: the file's).")] = "",
           as_json: Json = False) -> None:
    """Upload an evaluation set; a malformed one is refused with its row numbers."""

    def action(evals: Evals) -> None:
        created = evals.upload(file, name)
        if as_json:
            render.emit_json(created)
        else:
            render.out.print(f"{created['set_id']}  {escape(created['name'])}  {created.get('item_count', 0)}"
                             " questions")

    _run(ctx, as_json, action)


@app.command("sets")
def sets(ctx: typer.Context, as_json: Json = False) -> None:
    """List your evaluation sets."""

    def action(evals: Evals) -> None:
        found = evals.sets()
        if as_json:
            render.emit_json(found)
            return
        table = Table("id", "name", "questions", "kinds", "created")
        for s in found:
            kinds = ", ".join(f"{k} {v}" for k, v in sorted((s.get("kinds") or {}).items()))
            table.add_row(s["set_id"], escape(s["name"]), str(s.get("item_count", 0)), escape(kinds),
                          (s.get("create_time") or "")[:19])
        render.out.print(table)

    _run(ctx, as_json, action)


@app.command("run")
def run(
    ctx: typer.Context,
    set_id: Annotated[str, typer.Argument(help="The set's id (see `docuthinker evals sets`).")],
    doc: Annotated[list[str] | None, typer.Option("--doc", "-d", help="Only this document (repeatable).")] = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=0, max=50, help="Chunks per question (0: default).")] = 0,
    agent: Annotated[bool, typer.Option("--agent", help="Ask the agent graph instead of the answer engine.")] = False,
    label: Annotated[str, typer.Option(help="A note shown with the run.")] = "",
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Follow the run with a progress bar.")] = True,
    as_json: Json = False,
) -> None:
    """Run a set against your library (or --doc documents); with --wait, a progress bar, then the totals."""

    def action(evals: Evals) -> ExitCode:
        started = evals.start(set_id, list(doc or []), top_k, agent, label)
        current = follow(evals, started) if wait else started
        if as_json:
            render.emit_json(current)
        else:
            show_run(current)
        return ExitCode.ERROR if _state(current) in ("failed", "interrupted") else ExitCode.OK

    _run(ctx, as_json, action)


def follow(evals: Evals, run: dict[str, Any], poll_s: float = 0.5) -> dict[str, Any]:
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=render.err, transient=True) as bar:
        task = bar.add_task(f"run {run['run_id'][:8]}", total=run.get("total", 0))
        while run.get("state") == RUNNING:
            time.sleep(poll_s)
            run = evals.run(run["run_id"])
            bar.update(task, completed=run.get("completed", 0))
    return run


@app.command("runs")
def runs(ctx: typer.Context, set_id: Annotated[str, typer.Option("--set", help="Only this set's runs.")] = "",
         as_json: Json = False) -> None:
    """List your evaluation runs, newest first."""

    def action(evals: Evals) -> None:
        found = evals.runs(set_id)
        if as_json:
            render.emit_json(found)
            return
        table = Table("id", "set", "label", "state", "done", "correct", "cited", "refused (unans.)", "started")
        for r in found:
            overall = (r.get("totals") or {}).get("overall") or {}
            table.add_row(r["run_id"], escape(r.get("set_name", "")), escape(r.get("label", "")), _state(r),
                          f"{r.get('completed', 0)}/{r.get('total', 0)}", _rate(overall.get("answer_correct")),
                          _rate(overall.get("citation_hit")), _rate(overall.get("abstention_unanswerable")),
                          (r.get("create_time") or "")[:19])
        render.out.print(table)

    _run(ctx, as_json, action)


@app.command("show")
def show(ctx: typer.Context, run_id: Annotated[str, typer.Argument(help="The run's id.")],
         items: Annotated[bool, typer.Option("--items", help="Also every question's result.")] = False,
         as_json: Json = False) -> None:
    """A run: progress, settings, models and totals per kind and tag (--items: each question)."""

    def action(evals: Evals) -> None:
        current = evals.run(run_id)
        results = evals.items(run_id) if items else []
        if as_json:
            render.emit_json({**current, **({"items": results} if items else {})})
            return
        show_run(current)
        if items:
            table = Table("#", "id", "ok", "cite", "refused", "s", "question", "answer")
            for r in results:
                table.add_row(str(r.get("position", "")), escape(r["item"]["id"]), "Y" if r.get("correct") else "-",
                              "Y" if r.get("cited") else "-", "Y" if r.get("refused") else "-",
                              f"{float(r.get('latency_ms', 0)) / 1000:.2f}", escape(r["item"]["question"][:80]),
                              escape((r.get("error") or r.get("short_answer") or r.get("answer") or "")[:80]))
            render.out.print(table)

    _run(ctx, as_json, action)


@app.command("cancel")
def cancel(ctx: typer.Context, run_id: Annotated[str, typer.Argument(help="The run's id.")],
           as_json: Json = False) -> None:
    """Cancel a run (the questions done are kept)."""

    def action(evals: Evals) -> None:
        current = evals.cancel(run_id)
        render.emit_json(current) if as_json else render.out.print(
            f"{run_id} {_state(current)} after {current.get('completed', 0)}/{current.get('total', 0)}")

    _run(ctx, as_json, action)


@app.command("compare")
def compare(ctx: typer.Context, base: Annotated[str, typer.Argument(help="The base run's id.")],
            candidate: Annotated[str, typer.Argument(help="The run to compare with it.")],
            as_json: Json = False) -> None:
    """Two runs side by side: the settings that differ, the figures' deltas, what got better or worse."""

    def action(evals: Evals) -> None:
        body = evals.compare(base, candidate)
        if as_json:
            render.emit_json(body)
            return
        for d in body.get("differences", []):
            render.out.print(f"{d['name']}: {d.get('base')!r} -> {d.get('candidate')!r}", markup=False)
        table = Table("figure", "base", "candidate", "delta")
        left = ((body.get("base") or {}).get("totals") or {}).get("overall") or {}
        right = ((body.get("candidate") or {}).get("totals") or {}).get("overall") or {}
        for key, label in FIGURES:
            delta = (body.get("deltas") or {}).get(key)
            table.add_row(label, _rate(left.get(key)), _rate(right.get(key)),
                          "" if delta is None else f"{float(delta):+.3f}")
        render.out.print(table)
        render.out.print(" ".join(f"{k} {body.get(k, 0)}" for k in ("better", "worse", "same", "added", "removed")))
        for item in body.get("items", []):
            change = str(item.get("change", "")).removeprefix("EVAL_CHANGE_").lower()
            if change in ("better", "worse"):
                render.out.print(f"  {change:6} {escape(item['item_id'])}: {escape(item.get('question', '')[:90])}")

    _run(ctx, as_json, action)


@app.command("export")
def export(ctx: typer.Context, run_id: Annotated[str, typer.Argument(help="The run's id.")],
           fmt: Annotated[str, typer.Option("--format", "-f", help="csv or json.")] = "csv",
           output: Annotated[pathlib.Path | None, typer.Option("--output", "-o", help="File (default: stdout).")]
           = None) -> None:
    """Export a run as CSV (one row per question) or JSON."""

    def action(evals: Evals) -> None:
        data = evals.export(run_id, fmt)
        if output is None:
            render.out.file.write(data.decode("utf-8"))
        else:
            output.write_bytes(data)
            render.err.print(f"wrote {output} ({len(data)} bytes)")

    _run(ctx, False, action)


@app.command("delete-set")
def delete_set(ctx: typer.Context, set_id: Annotated[str, typer.Argument(help="The set's id.")],
               as_json: Json = False) -> None:
    """Delete a set with its runs."""

    def action(evals: Evals) -> None:
        body = evals.delete_set(set_id)
        render.emit_json(body) if as_json else render.out.print(
            f"deleted {set_id} and {body.get('runs_deleted', 0)} run(s)")

    _run(ctx, as_json, action)


__all__ = ["app", "Evals", "GatewayError"]
