"""The ``docuthinker`` commands (typer). Each maps its arguments to one ``Gateway`` call and one renderer."""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Callable
from typing import Annotated, Any

import typer

from docuthinker_cli import account, chat, render
from docuthinker_cli.client import Gateway, GatewayError
from docuthinker_cli.exit_codes import ExitCode
from docuthinker_cli.progress import expand, upload_all
from docuthinker_cli.runner import Json, Library, Target, run, target_from
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

def _complete_document_ids(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """Shell completion of DOC arguments: the ids of the tenant's documents, with their names."""
    root = ctx.find_root().params
    target = target_from(root.get("gateway") or os.environ.get("DOCUTHINKER_GATEWAY_URL"),
                     root.get("token") or os.environ.get("DOCUTHINKER_TOKEN"),
                     root.get("tenant") or os.environ.get("DOCUTHINKER_TENANT"), 3.0)
    try:
        with target.connect() as gateway:
            docs = gateway.documents()
    except GatewayError:
        return []
    return [(d["document_id"], d.get("filename", "")) for d in docs if d["document_id"].startswith(incomplete)]


Doc = Annotated[str, typer.Argument(help="A document: its name, part of its name, the start of its id, or its id"
                                         " (see `docuthinker docs`).", autocompletion=_complete_document_ids)]
Docs = Annotated[list[str] | None, typer.Option("--doc", "-d", help="Only this document (name, id or id prefix;"
                                                                    " repeatable).",
                                                autocompletion=_complete_document_ids)]


@app.callback()
def main_options(
    ctx: typer.Context,
    gateway: Annotated[str | None, typer.Option(envvar="DOCUTHINKER_GATEWAY_URL", show_default=False,
                                                help="Gateway base URL; default: the config file's (docuthinker"
                                                     " login), else http://127.0.0.1:8080.")] = None,
    token: Annotated[str | None, typer.Option(envvar="DOCUTHINKER_TOKEN", show_default=False,
                                              help="Bearer token; default: $DOCUTHINKER_TOKEN_FILE, the config file's"
                                                   " (docuthinker login), else data/auth/token (make run's).")] = None,
    tenant: Annotated[str | None, typer.Option(envvar="DOCUTHINKER_TENANT",
                                               help="x-tenant-id to send (auth off; with auth the token decides).",
                                               show_default=False)] = None,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds to wait for one reply.")] = 300.0,
) -> None:
    ctx.obj = target_from(gateway, token, tenant, timeout)


# -- documents ---------------------------------------------------------------------------
@app.command()
def upload(
    ctx: typer.Context,
    files: Annotated[list[pathlib.Path], typer.Argument(help="Files or folders to upload (PDF, DOCX, XLSX, CSV, HTML,"
                                                            " ...; a folder: every such file under it).")],
    wait: Annotated[bool, typer.Option("--wait", help="Also wait until each document is in the knowledge graph.")]
    = False,
    wait_timeout: Annotated[float, typer.Option(help="Seconds --wait waits per document.")] = 120.0,
    parallel: Annotated[int, typer.Option("--parallel", "-j", min=1, max=16,
                                          help="Files sent at the same time.")] = 2,
    as_json: Json = False,
) -> None:
    """Upload files and folders, a few at a time, one progress bar each; a document is searchable when its bar
    says ready."""
    target: Target = ctx.obj
    paths = expand(files)
    if not paths:
        render.error("nothing to upload: the folders hold no file of a type DocuThinker reads")
        raise typer.Exit(int(ExitCode.USAGE))

    def action(gateway: Gateway) -> ExitCode:
        outcomes = upload_all(target.connect, paths, render.err, wait_graph=wait, wait_timeout_s=wait_timeout,
                              parallel=parallel)
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

    run(ctx, as_json, action)


@app.command()
def docs(ctx: typer.Context, as_json: Json = False) -> None:
    """List the documents of your library."""

    def action(gateway: Gateway) -> None:
        found = gateway.documents()
        render.emit_json(found) if as_json else render.documents(found)

    run(ctx, as_json, action)


@app.command()
def delete(ctx: typer.Context, document_ids: Annotated[list[str], typer.Argument(
        help="Documents: names, ids or id prefixes.", autocompletion=_complete_document_ids)],
        as_json: Json = False) -> None:
    """Delete documents (their chunks, vectors and graph facts)."""

    def action(gateway: Gateway) -> None:
        removed = [gateway.delete(doc) for doc in Library(gateway).ids(document_ids)]
        if as_json:
            render.emit_json(removed)
        else:
            for r in removed:
                render.out.print(f"deleted {r.get('document_id')} ({r.get('chunks_removed', 0)} chunks)")

    run(ctx, as_json, action)


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
        for event in gateway.ask_stream(question, Library(gateway).ids(doc), agent=agent):
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

    run(ctx, as_json, action)


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
        body = gateway.search(query, top_k, Library(gateway).ids(doc))
        render.emit_json(body) if as_json else render.search(body.get("results", []))

    run(ctx, as_json, action)


# -- NLP on a stored document ------------------------------------------------------------------
def _nlp_command(operation: str, show: Callable[[dict[str, Any]], None], summary: str) -> None:
    def command(ctx: typer.Context, document_id: Doc, as_json: Json = False) -> None:
        def action(gateway: Gateway) -> None:
            body = gateway.nlp(operation, Library(gateway).id(document_id))
            render.emit_json(body) if as_json else show(body)

        run(ctx, as_json, action)

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

    run(ctx, as_json, action)


@app.command()
def health(ctx: typer.Context, as_json: Json = False) -> None:
    """Health of every service; exit code 5 unless all are SERVING."""

    def action(gateway: Gateway) -> ExitCode:
        body = gateway.health()
        render.emit_json(body) if as_json else render.health(body)
        return ExitCode.OK if body.get("status") == "SERVING" else ExitCode.UNAVAILABLE

    run(ctx, as_json, action)


@app.command()
def costs(ctx: typer.Context, as_json: Json = False) -> None:
    """LLM spend by provider, and the budgets."""

    def action(gateway: Gateway) -> None:
        body = gateway.costs()
        render.emit_json(body) if as_json else render.costs(body)

    run(ctx, as_json, action)


# -- conversations and the account -----------------------------------------------------------
app.command()(chat.chat)
app.add_typer(chat.conversations_app, name="conversations")
app.command()(account.login)
app.command()(account.logout)
app.add_typer(account.config_app, name="config")


def _add_subcommands() -> None:
    from docuthinker_cli import evals

    app.add_typer(evals.app, name="evals")


_add_subcommands()


# Sources and document versions live in their own module (docuthinker_cli/sources.py).
app.add_typer(sources_app, name="sources")
app.command("versions")(versions)
app.command("compare")(compare)


def main() -> None:
    app(prog_name="docuthinker")
