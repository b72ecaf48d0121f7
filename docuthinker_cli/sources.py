"""``docuthinker sources ...`` (places kept in sync) and ``docuthinker versions`` / ``docuthinker compare``
(a document's versions): each command is one or two REST calls and one renderer, as in ``app``."""

from __future__ import annotations

import sys
import time
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from docuthinker_cli import render, runner
from docuthinker_cli.client import Gateway, GatewayError
from docuthinker_cli.exit_codes import ExitCode

sources_app = typer.Typer(help="Places kept in sync: folders, IMAP mailboxes, WebDAV shares, Git branches.",
                          no_args_is_help=True)
Json = Annotated[bool, typer.Option("--json", help="Print the result as JSON (for scripts).")]
Interval = Annotated[int, typer.Option(help="Seconds between scheduled syncs (0: the service's default).")]
Password = Annotated[bool, typer.Option("--password-stdin", help="Read the password or token from standard input "
                                        "(else it is asked for, hidden).")]
SourceId = Annotated[str, typer.Argument(help="Source id (see `docuthinker sources list`).")]


def _run(ctx: typer.Context, as_json: bool, action) -> None:
    runner.run(ctx, as_json, action)


def _state(source: dict[str, Any]) -> str:
    return source.get("status", {}).get("state", "").removeprefix("SOURCE_STATE_").lower()


def _where(source: dict[str, Any]) -> str:
    for kind in ("folder", "imap", "webdav", "git"):
        config = source.get(kind)
        if config:
            if kind == "folder":
                return f"folder {config.get('path', '')}"
            if kind == "imap":
                return f"imap {config.get('username', '')}@{config.get('host', '')}"
            if kind == "webdav":
                return f"webdav {config.get('url', '')}"
            return f"git {config.get('url', '')} {config.get('branch', '')}".rstrip()
    return ""


def show_sources(sources: list[dict[str, Any]]) -> None:
    table = Table("id", "name", "where", "state", "last run", "docs", "failing", "next run")
    for source in sources:
        status = source.get("status", {})
        run = status.get("last_run", {})
        last = (f"+{run.get('added', 0)} ~{run.get('changed', 0)} -{run.get('deleted', 0)} "
                f"!{run.get('failed', 0)}") if status.get("last_run_end_time") else ""
        table.add_row(source.get("source_id", ""), escape(source.get("name", "")), escape(_where(source)),
                      _state(source) + (" (paused)" if source.get("paused") else ""), last,
                      str(status.get("documents", 0)), str(status.get("failing_items", 0)),
                      (status.get("next_run_time") or "")[:19])
    render.out.print(table)


def show_source(source: dict[str, Any]) -> None:
    status = source.get("status", {})
    run = status.get("last_run", {})
    render.out.print(f"[bold]{escape(source.get('name', ''))}[/] ({source.get('source_id')}): "
                     f"{escape(_where(source))}")
    render.out.print(f"state: {_state(source)}{' (paused)' if source.get('paused') else ''}; "
                     f"documents: {status.get('documents', 0)}; credential: "
                     f"{'stored' if source.get('has_credential') else 'none'}")
    render.out.print(f"last run: {status.get('last_run_start_time', '-')} -> {status.get('last_run_end_time', '-')}: "
                     f"seen {run.get('seen', 0)}, new {run.get('added', 0)}, changed {run.get('changed', 0)}, "
                     f"unchanged {run.get('unchanged', 0)}, deleted {run.get('deleted', 0)}, "
                     f"failed {run.get('failed', 0)}")
    render.out.print(f"next run: {status.get('next_run_time', '-')}")
    if status.get("error_reason"):
        render.out.print(f"[red]{status['error_reason']}[/]: {escape(status.get('error_message', ''))}")
    for error in status.get("item_errors", []):
        render.out.print(f"  [yellow]{escape(error.get('item', ''))}[/] {error.get('reason', '')} "
                         f"(attempt {error.get('attempts', 0)}, next {error.get('next_attempt_time', '-')}): "
                         f"{escape(error.get('message', ''))}")


def _credential(from_stdin: bool, needed: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\n")
    return typer.prompt("password or token", hide_input=True, default="", show_default=False) if needed else ""


def _create(ctx: typer.Context, as_json: bool, body: dict[str, Any]) -> None:
    def action(gateway: Gateway) -> None:
        created = gateway._call("POST", "/v1/sources", json=body)["source"]
        render.emit_json(created) if as_json else show_source(created)

    _run(ctx, as_json, action)


@sources_app.command("list")
def list_sources(ctx: typer.Context, as_json: Json = False) -> None:
    """The sources with their state, last run and failing items."""

    def action(gateway: Gateway) -> None:
        found = gateway._call("GET", "/v1/sources", params={"page_size": 100}).get("sources", [])
        render.emit_json(found) if as_json else show_sources(found)

    _run(ctx, as_json, action)


@sources_app.command("show")
def show(ctx: typer.Context, source_id: SourceId, as_json: Json = False) -> None:
    """One source: its status, the last run's counts, errors with reasons and when failing items are retried."""

    def action(gateway: Gateway) -> None:
        found = gateway._call("GET", f"/v1/sources/{source_id}")["source"]
        render.emit_json(found) if as_json else show_source(found)

    _run(ctx, as_json, action)


@sources_app.command("add-folder")
def add_folder(ctx: typer.Context, name: str, path: str,
               include: Annotated[list[str] | None, typer.Option(help="Only paths matching (repeatable).")] = None,
               exclude: Annotated[list[str] | None, typer.Option(help="Not paths matching (repeatable).")] = None,
               poll_only: Annotated[bool, typer.Option(help="No file watch: the schedule only.")] = False,
               interval: Interval = 0, as_json: Json = False) -> None:
    """A folder on the rag service's machine (under its allowed roots), watched for changes."""
    _create(ctx, as_json, {"name": name, "interval_seconds": interval, "folder": {
        "path": path, "include": include or [], "exclude": exclude or [], "poll_only": poll_only}})


@sources_app.command("add-imap")
def add_imap(ctx: typer.Context, name: str, host: str, username: str,
             port: Annotated[int, typer.Option(help="0: 993 with TLS, 143 otherwise.")] = 0,
             security: Annotated[str, typer.Option(help="tls, starttls or none.")] = "tls",
             mailbox: Annotated[list[str] | None, typer.Option(help="Mailbox to read (repeatable; default INBOX).")]
             = None,
             attachments_inline: Annotated[bool, typer.Option(help="Keep attachments inside their message.")] = False,
             password_stdin: Password = False, interval: Interval = 0, as_json: Json = False) -> None:
    """An IMAP mailbox: each message a document, each attachment another."""
    _create(ctx, as_json, {"name": name, "interval_seconds": interval,
                           "credential": _credential(password_stdin, True), "imap": {
                               "host": host, "port": port, "username": username, "mailboxes": mailbox or [],
                               "security": f"IMAP_SECURITY_{security.upper()}",
                               "attachments_inline": attachments_inline}})


@sources_app.command("add-webdav")
def add_webdav(ctx: typer.Context, name: str, url: str,
               username: Annotated[str, typer.Option(help="Login (none: an open share).")] = "",
               password_stdin: Password = False, interval: Interval = 0, as_json: Json = False) -> None:
    """A WebDAV share (Nextcloud, ownCloud, mod_dav ...): every file under the URL."""
    _create(ctx, as_json, {"name": name, "interval_seconds": interval,
                           "credential": _credential(password_stdin, bool(username)),
                           "webdav": {"url": url, "username": username}})


@sources_app.command("add-git")
def add_git(ctx: typer.Context, name: str, url: str,
            branch: Annotated[str, typer.Option(help="Branch (default: the repository's).")] = "",
            username: Annotated[str, typer.Option(help="Login for https (with a password or token).")] = "",
            password_stdin: Password = False, interval: Interval = 0, as_json: Json = False) -> None:
    """The files of a Git branch."""
    _create(ctx, as_json, {"name": name, "interval_seconds": interval,
                           "credential": _credential(password_stdin, bool(username)),
                           "git": {"url": url, "branch": branch, "username": username}})


@sources_app.command("sync")
def sync(ctx: typer.Context, source_id: SourceId,
         wait: Annotated[bool, typer.Option("--wait", help="Wait until the sync has ended and show it.")] = False,
         wait_timeout: Annotated[float, typer.Option(help="Seconds --wait waits.")] = 600.0,
         as_json: Json = False) -> None:
    """Sync a source now (exit code 1 with --wait when the sync failed)."""

    def action(gateway: Gateway) -> ExitCode:
        asked = time.time()
        source = gateway._call("POST", f"/v1/sources/{source_id}:sync", json={})["source"]
        deadline = time.monotonic() + wait_timeout
        while wait:
            status = source.get("status", {})
            if status.get("state") != "SOURCE_STATE_RUNNING" and _after(status.get("last_run_start_time"), asked) \
                    and status.get("last_run_end_time", "") >= status.get("last_run_start_time", ""):
                break
            if time.monotonic() > deadline:
                raise GatewayError(f"source {source_id} did not finish a sync in {wait_timeout:.0f} s",
                                   ExitCode.UNAVAILABLE)
            time.sleep(0.5)
            source = gateway._call("GET", f"/v1/sources/{source_id}")["source"]
        render.emit_json(source) if as_json else show_source(source)
        return ExitCode.ERROR if wait and _state(source) == "failed" else ExitCode.OK

    _run(ctx, as_json, action)


def _after(stamp: str | None, moment: float) -> bool:
    import datetime as dt

    if not stamp:
        return False
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() >= moment - 1


def _patch(ctx: typer.Context, source_id: str, body: dict[str, Any], mask: str, as_json: bool) -> None:
    def action(gateway: Gateway) -> None:
        updated = gateway._call("PATCH", f"/v1/sources/{source_id}", json=body,
                                params={"update_mask": mask})["source"]
        render.emit_json(updated) if as_json else show_source(updated)

    _run(ctx, as_json, action)


@sources_app.command("pause")
def pause(ctx: typer.Context, source_id: SourceId, as_json: Json = False) -> None:
    """Stop scheduled syncs and file events of a source (a sync on demand still runs)."""
    _patch(ctx, source_id, {"paused": True}, "paused", as_json)


@sources_app.command("resume")
def resume(ctx: typer.Context, source_id: SourceId, as_json: Json = False) -> None:
    """Sync a paused source on schedule again."""
    _patch(ctx, source_id, {"paused": False}, "paused", as_json)


@sources_app.command("set-credential")
def set_credential(ctx: typer.Context, source_id: SourceId, password_stdin: Password = False,
                   as_json: Json = False) -> None:
    """Replace a source's password or token (stored encrypted); the source syncs at once."""
    _patch(ctx, source_id, {"credential": _credential(password_stdin, True)}, "credential", as_json)


@sources_app.command("remove")
def remove(ctx: typer.Context, source_id: SourceId,
           keep_documents: Annotated[bool, typer.Option(help="Keep the source's documents.")] = False,
           as_json: Json = False) -> None:
    """Remove a source and (unless --keep-documents) the documents it brought."""

    def action(gateway: Gateway) -> None:
        gone = gateway._call("DELETE", f"/v1/sources/{source_id}",
                             params={"keep_documents": str(keep_documents).lower()})
        render.emit_json(gone) if as_json else render.out.print(
            f"removed {source_id} ({gone.get('documents_deleted', 0)} document(s) deleted)")

    _run(ctx, as_json, action)


# -- a document's versions ------------------------------------------------------------------------------
def versions(ctx: typer.Context, document_id: Annotated[str, typer.Argument(help="Document id.")],
             as_json: Json = False) -> None:
    """A document's versions, newest first, with how many chunks each re-embedded or reused."""

    def action(gateway: Gateway) -> None:
        body = gateway._call("GET", f"/v1/documents/{document_id}/versions")
        if as_json:
            render.emit_json(body)
            return
        table = Table("version", "state", "file", "chunks", "embedded", "reused", "uploaded")
        for v in body.get("versions", []):
            table.add_row(str(v.get("version")), v.get("state", "").removeprefix("VERSION_STATE_").lower(),
                          escape(v.get("filename", "")), str(v.get("chunk_count", 0)), str(v.get("chunks_embedded", 0)),
                          str(v.get("chunks_reused", 0)), (v.get("create_time") or "")[:19])
        render.out.print(table)

    _run(ctx, as_json, action)


def compare(ctx: typer.Context, document_id: Annotated[str, typer.Argument(help="Document id.")],
            from_version: Annotated[int, typer.Option("--from", help="Older version (0: the one before --to).")] = 0,
            to_version: Annotated[int, typer.Option("--to", help="Newer version (0: the live one).")] = 0,
            as_json: Json = False) -> None:
    """What changed between two versions: changed, added and removed passages, with where they are."""

    def action(gateway: Gateway) -> None:
        body = gateway._call("GET", f"/v1/documents/{document_id}:compare",
                             params={"from": from_version, "to": to_version})
        if as_json:
            render.emit_json(body)
            return
        render.out.print(f"version {body.get('from')} -> {body.get('to')}: {body.get('changed', 0)} changed, "
                         f"{body.get('added', 0)} added, {body.get('removed', 0)} removed, "
                         f"{body.get('unchanged', 0)} unchanged")
        for change in body.get("changes", []):
            kind = change.get("kind", "").removeprefix("KIND_").lower()
            before, after = change.get("before", {}), change.get("after", {})
            side = after or before
            where = " > ".join(side.get("provenance", {}).get("heading_path", [])) or \
                f"p. {side.get('provenance', {}).get('page', 0)}"
            render.out.print(f"[bold]{kind}[/] ({escape(where)})")
            if before:
                render.out.print(f"  [red]- {escape(before.get('text', ''))}[/]")
            if after:
                render.out.print(f"  [green]+ {escape(after.get('text', ''))}[/]")

    _run(ctx, as_json, action)
