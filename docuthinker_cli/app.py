"""The ``docuthinker`` commands (typer). Each maps its arguments to one ``Gateway`` call and one renderer."""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from docuthinker_cli import render
from docuthinker_cli.client import DEFAULT_GATEWAY, Gateway, GatewayError
from docuthinker_cli.exit_codes import ExitCode
from docuthinker_cli.progress import upload_all
from docuthinker_cli.sources import compare, sources_app, versions

app = typer.Typer(
    name="docuthinker",
    help="DocuThinker from the command line: upload documents, ask cited questions, search, analyse, query the graph.",
    epilog="Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 auth, 5 unavailable, 6 rate limited.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
graph_app = typer.Typer(help="The knowledge graph.", no_args_is_help=True)
app.add_typer(graph_app, name="graph")

Json = Annotated[bool, typer.Option("--json", help="Print the result as JSON (for scripts).")]


def token_file() -> pathlib.Path:
    """Where ``make run`` leaves its admin token: ``DOCUTHINKER_TOKEN_FILE``, else ``<data dir>/auth/token``."""
    named = os.environ.get("DOCUTHINKER_TOKEN_FILE")
    if named:
        return pathlib.Path(named)
    return pathlib.Path(os.environ.get("DOCUTHINKER_DATA_DIR", "data")) / "auth" / "token"


def default_token() -> str | None:
    """The local mesh's token, when no ``--token``/``DOCUTHINKER_TOKEN`` is given and the file is readable."""
    try:
        return token_file().read_text().strip() or None
    except OSError:
        return None


@dataclass(frozen=True)
class Target:
    gateway: str
    token: str | None
    tenant: str | None
    timeout_s: float

    def connect(self) -> Gateway:
        return Gateway(self.gateway, self.token, self.tenant, self.timeout_s)


def _complete_document_ids(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """Shell completion of DOC arguments: the ids of the tenant's documents, with their names."""
    root = ctx.find_root().params
    target = Target(root.get("gateway") or os.environ.get("DOCUTHINKER_GATEWAY_URL", DEFAULT_GATEWAY),
                    root.get("token") or os.environ.get("DOCUTHINKER_TOKEN") or default_token(),
                    root.get("tenant") or os.environ.get("DOCUTHINKER_TENANT"), 3.0)
    try:
        with target.connect() as gateway:
            docs = gateway.documents()
    except GatewayError:
        return []
    return [(d["document_id"], d.get("filename", "")) for d in docs if d["document_id"].startswith(incomplete)]


Doc = Annotated[str, typer.Argument(help="Document id (see `docuthinker docs`).",
                                    autocompletion=_complete_document_ids)]
Docs = Annotated[list[str] | None, typer.Option("--doc", "-d", help="Only this document (repeatable).",
                                                autocompletion=_complete_document_ids)]


@app.callback()
def main_options(
    ctx: typer.Context,
    gateway: Annotated[str, typer.Option(envvar="DOCUTHINKER_GATEWAY_URL", help="Gateway base URL.")] = DEFAULT_GATEWAY,
    token: Annotated[str | None, typer.Option(envvar="DOCUTHINKER_TOKEN", show_default=False,
                                              help="Bearer token; default: the one `make run` wrote to"
                                                   " $DOCUTHINKER_TOKEN_FILE or data/auth/token.")] = None,
    tenant: Annotated[str | None, typer.Option(envvar="DOCUTHINKER_TENANT",
                                               help="x-tenant-id to send (auth off; with auth the token decides).",
                                               show_default=False)] = None,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds to wait for one reply.")] = 300.0,
) -> None:
    ctx.obj = Target(gateway, token or default_token(), tenant, timeout)


def _run(ctx: typer.Context, as_json: bool, action: Callable[[Gateway], ExitCode | None]) -> None:
    """Runs ``action`` against the gateway; a ``GatewayError`` becomes its message and exit code."""
    target: Target = ctx.obj
    try:
        with target.connect() as gateway:
            code = action(gateway) or ExitCode.OK
    except GatewayError as exc:
        if as_json:
            render.emit_json(exc.as_json())
        render.error(str(exc))
        raise typer.Exit(int(exc.exit_code)) from None
    if code is not ExitCode.OK:
        raise typer.Exit(int(code))


# -- documents ---------------------------------------------------------------------------
@app.command()
def upload(
    ctx: typer.Context,
    files: Annotated[list[pathlib.Path], typer.Argument(help="Files to upload (PDF, DOCX, XLSX, CSV, HTML, ...).")],
    wait: Annotated[bool, typer.Option("--wait", help="Also wait until each document is in the knowledge graph.")]
    = False,
    wait_timeout: Annotated[float, typer.Option(help="Seconds --wait waits per document.")] = 120.0,
    as_json: Json = False,
) -> None:
    """Upload files, one progress bar each; a document is searchable when its bar says ready."""

    def action(gateway: Gateway) -> ExitCode:
        outcomes = upload_all(gateway, files, render.err, wait_graph=wait, wait_timeout_s=wait_timeout)
        if as_json:
            render.emit_json([o.as_json() for o in outcomes])
        else:
            for o in outcomes:
                if o.error is None and o.document is not None:
                    render.out.print(f"{o.document.get('document_id')}  {o.file}"
                                     f"{'  (duplicate of a stored document)' if o.duplicate else ''}", markup=False)
                elif o.error is not None:
                    render.error(f"{o.file}: {o.error}")
        failed = [o.error for o in outcomes if o.error is not None]
        return failed[0].exit_code if failed else ExitCode.OK

    _run(ctx, as_json, action)


@app.command()
def docs(ctx: typer.Context, as_json: Json = False) -> None:
    """List the documents of your library."""

    def action(gateway: Gateway) -> None:
        found = gateway.documents()
        render.emit_json(found) if as_json else render.documents(found)

    _run(ctx, as_json, action)


@app.command()
def delete(ctx: typer.Context, document_ids: Annotated[list[str], typer.Argument(
        help="Document ids.", autocompletion=_complete_document_ids)], as_json: Json = False) -> None:
    """Delete documents (their chunks, vectors and graph facts)."""

    def action(gateway: Gateway) -> None:
        removed = [gateway.delete(doc) for doc in document_ids]
        if as_json:
            render.emit_json(removed)
        else:
            for r in removed:
                render.out.print(f"deleted {r.get('document_id')} ({r.get('chunks_removed', 0)} chunks)")

    _run(ctx, as_json, action)


# -- answers and search ----------------------------------------------------------------------
@app.command()
def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="Your question.")],
    doc: Docs = None,
    agent: Annotated[bool, typer.Option(
        "--agent", help="Use the planner → retriever → reasoner → validator agent.")] = False,
    as_json: Json = False,
) -> None:
    """Ask a question; the answer streams in, then its numbered citations (file, page, excerpt)."""

    def action(gateway: Gateway) -> None:
        final: dict[str, Any] | None = None
        for event in gateway.ask_stream(question, list(doc or []), agent=agent):
            if "answer_delta" in event and not as_json:
                render.delta(event["answer_delta"])
            elif "node" in event and not as_json:
                render.agent_step(event["node"])
            elif "done" in event:
                final = event["done"]
        if final is None:
            raise GatewayError("the answer stream ended without an answer", ExitCode.ERROR)
        if as_json:
            render.emit_json(final)
            return
        answer = final.get("answer", final) if agent else final
        if agent:
            render.out.print(answer.get("answer", ""), markup=False)
        render.answer_footer(answer)

    _run(ctx, as_json, action)


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=50, help="How many chunks.")] = 6,
    doc: Docs = None,
    as_json: Json = False,
) -> None:
    """Hybrid (keyword + semantic) search over your documents' chunks."""

    def action(gateway: Gateway) -> None:
        body = gateway.search(query, top_k, list(doc or []))
        render.emit_json(body) if as_json else render.search(body.get("results", []))

    _run(ctx, as_json, action)


# -- NLP on a stored document ------------------------------------------------------------------
def _nlp_command(operation: str, show: Callable[[dict[str, Any]], None], summary: str) -> None:
    def command(ctx: typer.Context, document_id: Doc, as_json: Json = False) -> None:
        def action(gateway: Gateway) -> None:
            body = gateway.nlp(operation, document_id)
            render.emit_json(body) if as_json else show(body)

        _run(ctx, as_json, action)

    command.__doc__ = summary
    app.command(operation)(command)


_nlp_command("summary", render.summary, "An extractive (or, with a provider, abstractive) summary of a document.")
_nlp_command("key-ideas", render.key_ideas, "The key ideas of a document, most central first.")
_nlp_command("entities", render.entities, "People, organisations, places, dates, amounts named in a document.")
_nlp_command("sentiment", render.sentiment, "The overall sentiment of a document.")


# -- graph and system ----------------------------------------------------------------------------
def _param(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise typer.BadParameter(f"{text!r}: expected NAME=VALUE")
    try:
        return name, json.loads(value)
    except ValueError:
        return name, value


@graph_app.command("query")
def graph_query(
    ctx: typer.Context,
    cypher: Annotated[str, typer.Argument(help="A read-only Cypher query, e.g. 'MATCH (d:Document) RETURN d.id'.")],
    param: Annotated[list[str] | None, typer.Option("--param", "-p", help="NAME=VALUE (JSON or text), repeatable.")]
    = None,
    limit: Annotated[int, typer.Option(min=0, help="Row limit (0: the server's default).")] = 0,
    as_json: Json = False,
) -> None:
    """Run a read-only Cypher query on your knowledge graph."""
    params = dict(_param(p) for p in param or [])

    def action(gateway: Gateway) -> None:
        body = gateway.graph_query(cypher, params, limit)
        render.emit_json(body) if as_json else render.graph_rows(body)

    _run(ctx, as_json, action)


@app.command()
def health(ctx: typer.Context, as_json: Json = False) -> None:
    """Health of every service; exit code 5 unless all are SERVING."""

    def action(gateway: Gateway) -> ExitCode:
        body = gateway.health()
        render.emit_json(body) if as_json else render.health(body)
        return ExitCode.OK if body.get("status") == "SERVING" else ExitCode.UNAVAILABLE

    _run(ctx, as_json, action)


@app.command()
def costs(ctx: typer.Context, as_json: Json = False) -> None:
    """LLM spend by provider, and the budgets."""

    def action(gateway: Gateway) -> None:
        body = gateway.costs()
        render.emit_json(body) if as_json else render.costs(body)

    _run(ctx, as_json, action)


# Sources and document versions live in their own module (docuthinker_cli/sources.py).
app.add_typer(sources_app, name="sources")
app.command("versions")(versions)
app.command("compare")(compare)


def main() -> None:
    app(prog_name="docuthinker")
