"""What every command shares: where it connects (``Target``), names and id prefixes of documents (``Library``),
and how a command's gateway errors become its message and exit code (``run``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from docuthinker_cli import config, references, render
from docuthinker_cli.client import DEFAULT_GATEWAY, Gateway, GatewayError
from docuthinker_cli.exit_codes import ExitCode

Json = Annotated[bool, typer.Option("--json", help="Print the result as JSON (for scripts).")]


@dataclass(frozen=True)
class Target:
    gateway: str
    token: str | None
    tenant: str | None
    timeout_s: float
    token_source: str = ""

    def connect(self) -> Gateway:
        return Gateway(self.gateway, self.token, self.tenant, self.timeout_s)


def target_from(gateway: str | None, token: str | None, tenant: str | None, timeout_s: float) -> Target:
    try:
        found_token, found_gateway = config.find_token(token), config.find_gateway(gateway)
    except config.ConfigError as exc:
        render.error(str(exc))
        raise typer.Exit(int(ExitCode.USAGE)) from None
    return Target(found_gateway.value or DEFAULT_GATEWAY, found_token.value, tenant, timeout_s, found_token.source)


class Library:
    """The tenant's documents, listed once per command, to turn names and id prefixes into ids."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway
        self._documents: list[dict[str, Any]] | None = None

    def id(self, reference: str) -> str:
        if self._documents is None:
            self._documents = self._gateway.documents()
        return references.document_id(reference, self._documents)

    def ids(self, references_: list[str] | None) -> list[str]:
        return [self.id(r) for r in references_ or []]


def run(ctx: typer.Context, as_json: bool, action: Callable[[Gateway], ExitCode | None]) -> None:
    """Runs ``action`` against the gateway; a ``GatewayError`` becomes its message and exit code."""
    target: Target = ctx.obj
    try:
        with target.connect() as gateway:
            code = action(gateway) or ExitCode.OK
    except GatewayError as exc:
        if as_json:
            render.emit_json(exc.as_json())
        render.error(str(exc))
        if exc.http_status == 401:
            render.err.print(config.NO_TOKEN_HINT if not target.token else
                             f"hint: the token from {target.token_source} was refused; `docuthinker login` stores"
                             " another")
        raise typer.Exit(int(exc.exit_code)) from None
    if code is not ExitCode.OK:
        raise typer.Exit(int(code))
