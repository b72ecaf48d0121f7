"""``docuthinker login``, ``logout`` and ``config``: the gateway and token kept in the config file."""

from __future__ import annotations

import getpass
import pathlib
import sys
import time
from typing import Annotated

import typer

from docuthinker_cli import config, render
from docuthinker_cli.client import Gateway, GatewayError
from docuthinker_cli.exit_codes import ExitCode
from docuthinker_cli.runner import Target

config_app = typer.Typer(help="Show or change the config file (gateway, token, token_file).",
                         invoke_without_command=True)


def _who(token: str) -> str:
    claims = config.claims(token)
    if not claims:
        return "a token that is no JWT"
    parts = [f"tenant {claims.get('tenant', '?')}", f"user {claims.get('sub', '(none)')}",
             f"role {claims.get('role', 'user')}"]
    if claims.get("exp"):
        left = float(claims["exp"]) - time.time()
        parts.append("expired" if left <= 0 else f"expires in {left / 3600:.0f} h")
    return ", ".join(parts)


def login(
    ctx: typer.Context,
    token_file: Annotated[pathlib.Path | None, typer.Option("--token-file", help="Read the token from this file at"
                                                            " each call (e.g. a mesh's data/auth/token).")] = None,
    gateway: Annotated[str | None, typer.Option("--gateway", help="The gateway to use from now on.")] = None,
) -> None:
    """Store a bearer token (pasted, piped on stdin, DOCUTHINKER_TOKEN or --token) and the gateway in the config
    file, after checking the gateway accepts it."""
    target: Target = ctx.obj
    stored = config.load()
    values = dict(stored)
    explicit = ctx.find_root().params.get("token")
    if token_file is not None:
        path = token_file.expanduser()
        token = path.read_text().strip() if path.is_file() else ""
        if not token:
            render.error(f"{token_file}: no token there")
            raise typer.Exit(int(ExitCode.USAGE))
        values.pop("token", None)
        values["token_file"] = str(token_file.expanduser().resolve())
    else:
        token = explicit or ""
        if not token:
            token = (getpass.getpass("Bearer token: ") if sys.stdin.isatty() else sys.stdin.readline()).strip()
        if not token:
            render.error("no token given")
            raise typer.Exit(int(ExitCode.USAGE))
        values.pop("token_file", None)
        values["token"] = token
    base = gateway or target.gateway
    try:
        with Gateway(base, token, None, 10.0) as check:
            check.conversations(page_size=1)
    except GatewayError as exc:
        render.error(f"the gateway at {base} refused this token: {exc}")
        raise typer.Exit(int(exc.exit_code)) from None
    if gateway:
        values["gateway"] = gateway
    path = config.save(values)
    render.out.print(f"logged in to {base} as {_who(token)}; saved in {path}", markup=False)


def logout() -> None:
    """Forget the stored token (the config file keeps its gateway)."""
    values = config.load()
    had = values.pop("token", None) or values.pop("token_file", None)
    path = config.save(values)
    render.out.print(f"{'token removed from' if had else 'no token was stored in'} {path}", markup=False)


@config_app.callback()
def show(ctx: typer.Context) -> None:
    """Where the gateway and the token come from now, and who the token is."""
    if ctx.invoked_subcommand is not None:
        return
    target: Target = ctx.obj
    gateway = config.find_gateway(ctx.find_root().params.get("gateway"))
    render.out.print(f"config file: {config.config_path()}", markup=False)
    render.out.print(f"gateway:     {gateway.value} (from {gateway.source})", markup=False)
    if target.token:
        masked = f"{target.token[:10]}…{target.token[-6:]}"
        render.out.print(f"token:       {masked} (from {target.token_source}): {_who(target.token)}", markup=False)
    else:
        render.out.print(f"token:       none; {config.NO_TOKEN_HINT}", markup=False)


@config_app.command("set")
def set_value(key: Annotated[str, typer.Argument(help="gateway, token or token_file")],
              value: Annotated[str, typer.Argument(help="Its value")]) -> None:
    """Set one key of the config file."""
    key = key.replace("-", "_")
    if key not in config.KEYS:
        render.error(f"unknown key {key!r}: one of {', '.join(config.KEYS)}")
        raise typer.Exit(int(ExitCode.USAGE))
    values = config.load()
    values[key] = value
    if key == "token":
        values.pop("token_file", None)
    elif key == "token_file":
        values.pop("token", None)
    render.out.print(f"{key} set in {config.save(values)}", markup=False)


@config_app.command("unset")
def unset_value(key: Annotated[str, typer.Argument(help="gateway, token or token_file")]) -> None:
    """Remove one key from the config file."""
    values = config.load()
    values.pop(key.replace("-", "_"), None)
    render.out.print(f"{key} removed from {config.save(values)}", markup=False)
