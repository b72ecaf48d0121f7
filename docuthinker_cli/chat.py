"""``docuthinker chat`` (a conversation kept on the server; follow-ups read against its earlier turns) and
``docuthinker conversations`` (list, show, rename, delete)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from docuthinker_cli import references, render
from docuthinker_cli.client import Gateway, GatewayError
from docuthinker_cli.exit_codes import ExitCode
from docuthinker_cli.runner import Json, Library, run

conversations_app = typer.Typer(help="Your conversations (kept on the server, per user).",
                                invoke_without_command=True)
Ref = Annotated[str, typer.Argument(help="A conversation: the start of its id, its id, or (part of) its title.")]
END_WORDS = {"/exit", "/quit", "exit", "quit"}


def _conversation(gateway: Gateway, reference: str) -> str:
    return references.conversation_id(reference, gateway.conversations())


def ask(gateway: Gateway, conversation_id: str, question: str, document_ids: list[str],
        quiet: bool = False) -> tuple[str, dict[str, Any]]:
    """Asks one question; streams the answer to the terminal unless ``quiet``. (conversation id, stored turn)."""
    done: dict[str, Any] | None = None
    for event in gateway.ask_in(conversation_id, question, document_ids):
        if "conversation" in event:
            conversation_id = event["conversation"]["conversation_id"]
        elif "resolved" in event and not quiet:
            render.resolved(event["resolved"])
        elif "answer_delta" in event and not quiet:
            render.delta(event["answer_delta"])
        elif "done" in event:
            done = event["done"]
    if done is None:
        raise GatewayError("the answer stream ended without its answer", ExitCode.ERROR)
    if not quiet:
        render.out.print("")
        render.answer_footer(done.get("answer", {}))
    return conversation_id, done


def chat(
    ctx: typer.Context,
    question: Annotated[str | None, typer.Argument(help="Ask this and exit; without it, a prompt asks one question"
                                                        " after another until an empty line or Ctrl-D.")] = None,
    resume: Annotated[bool, typer.Option("--continue", "-c", help="Continue your most recent conversation.")] = False,
    conversation: Annotated[str | None, typer.Option("--conversation", "-C", help="Continue this conversation (id,"
                                                     " start of its id, or title).")] = None,
    doc: Annotated[list[str] | None, typer.Option("--doc", "-d", help="Only this document (name, id or id prefix;"
                                                  " repeatable); default: the conversation's, else the library.")]
    = None,
    as_json: Json = False,
) -> None:
    """Chat with your documents: each answer is cited, and a follow-up ("when did she write it?") is read
    against the earlier questions. The conversation is kept on the server (`docuthinker conversations`)."""

    def action(gateway: Gateway) -> ExitCode:
        conversation_id = "-"
        if conversation:
            conversation_id = _conversation(gateway, conversation)
        elif resume:
            recent = gateway.conversations(page_size=1)
            if not recent:
                raise GatewayError("no conversation to continue yet: start one with `docuthinker chat`",
                                   ExitCode.NOT_FOUND)
            conversation_id = recent[0]["conversation_id"]
        documents = Library(gateway).ids(doc)
        if question is not None:
            conversation_id, turn = ask(gateway, conversation_id, question, documents, quiet=as_json)
            if as_json:
                render.emit_json({"conversation_id": conversation_id, **turn})
            return ExitCode.OK
        render.err.print("[dim]" + ("a new conversation" if conversation_id == "-" else
                                    f"conversation {conversation_id[:12]}")
                         + "; ask a question (an empty line, /exit or Ctrl-D ends)[/]")
        while True:
            try:
                line = render.out.input("[bold]you>[/] ").strip()
            except EOFError:
                render.out.print("")
                break
            if not line or line in END_WORDS:
                break
            try:
                conversation_id, _ = ask(gateway, conversation_id, line, documents)
            except GatewayError as exc:  # one failed question does not end the conversation
                render.error(str(exc))
        if conversation_id != "-":
            render.err.print(f"[dim]conversation {conversation_id[:12]}: `docuthinker chat --continue` goes on[/]")
        return ExitCode.OK

    run(ctx, as_json, action)


@conversations_app.callback()
def list_conversations(ctx: typer.Context, as_json: Json = False) -> None:
    """Your conversations, most recently used first."""
    if ctx.invoked_subcommand is not None:
        return

    def action(gateway: Gateway) -> None:
        found = gateway.conversations()
        render.emit_json(found) if as_json else render.conversations(found)

    run(ctx, as_json, action)


@conversations_app.command("show")
def show(ctx: typer.Context, reference: Ref, as_json: Json = False) -> None:
    """A conversation's questions and cited answers."""

    def action(gateway: Gateway) -> None:
        body = gateway.conversation(_conversation(gateway, reference))
        if as_json:
            render.emit_json(body)
            return
        info = body.get("conversation", {})
        render.out.print(f"[bold]{info.get('title', '')}[/] ({info.get('conversation_id', '')})\n")
        for item in body.get("turns", []):
            render.turn(item)

    run(ctx, as_json, action)


@conversations_app.command("rename")
def rename(ctx: typer.Context, reference: Ref, title: Annotated[str, typer.Argument(help="The new title.")],
           as_json: Json = False) -> None:
    """Rename a conversation."""

    def action(gateway: Gateway) -> None:
        body = gateway.rename_conversation(_conversation(gateway, reference), title)
        render.emit_json(body) if as_json else render.out.print(
            f"renamed {body['conversation_id'][:12]}: {body['title']}", markup=False)

    run(ctx, as_json, action)


@conversations_app.command("delete")
def delete(ctx: typer.Context, reference: Ref, as_json: Json = False) -> None:
    """Delete a conversation and its turns."""

    def action(gateway: Gateway) -> ExitCode:
        conversation_id = _conversation(gateway, reference)
        deleted = gateway.delete_conversation(conversation_id)
        if as_json:
            render.emit_json({"conversation_id": conversation_id, "deleted": deleted})
        else:
            render.out.print(f"{'deleted' if deleted else 'no such conversation:'} {conversation_id}", markup=False)
        return ExitCode.OK if deleted else ExitCode.NOT_FOUND

    run(ctx, as_json, action)
