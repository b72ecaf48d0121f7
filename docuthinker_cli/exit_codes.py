"""Exit codes of every ``docuthinker`` command: stable, for scripts."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1
    USAGE = 2
    NOT_FOUND = 3
    AUTH = 4
    UNAVAILABLE = 5
    RATE_LIMITED = 6


MEANING = {
    ExitCode.OK: "the command did what was asked",
    ExitCode.ERROR: "the server refused the request or failed (bad input, an internal error, an error inside a stream)",
    ExitCode.USAGE: "the command line is wrong: unknown command or option, missing or bad argument (click's own code)",
    ExitCode.NOT_FOUND: "a named document does not exist for this tenant (HTTP 404), or a file to upload is missing",
    ExitCode.AUTH: "a valid bearer token is needed (HTTP 401) or the token does not allow this (HTTP 403)",
    ExitCode.UNAVAILABLE: ("the gateway cannot be reached, or a service behind it is down or timed out"
                           " (HTTP 502/503/504)"),
    ExitCode.RATE_LIMITED: "too many requests, or a token or money budget is spent (HTTP 429)",
}


def for_http_status(status: int) -> ExitCode:
    if status in (401, 403):
        return ExitCode.AUTH
    if status == 404:
        return ExitCode.NOT_FOUND
    if status == 429:
        return ExitCode.RATE_LIMITED
    if status in (502, 503, 504):
        return ExitCode.UNAVAILABLE
    return ExitCode.ERROR


# google.rpc.Code -> exit code, for errors that arrive in-band inside an SSE stream.
_BY_RPC_CODE = {5: ExitCode.NOT_FOUND, 16: ExitCode.AUTH, 7: ExitCode.AUTH, 8: ExitCode.RATE_LIMITED,
                14: ExitCode.UNAVAILABLE, 4: ExitCode.UNAVAILABLE}


def for_rpc_code(code: int) -> ExitCode:
    return _BY_RPC_CODE.get(code, ExitCode.ERROR)


def table() -> str:
    """The exit codes as a Markdown table (the README's)."""
    rows = [f"| {code.value} | `{code.name}` | {MEANING[code]} |" for code in ExitCode]
    return "\n".join(["| code | name | meaning |", "| --- | --- | --- |", *rows])
