"""Where the CLI finds its gateway and its token, and the config file ``docuthinker login`` writes.

The token, first found wins:

1. ``--token`` or ``DOCUTHINKER_TOKEN``;
2. the file ``DOCUTHINKER_TOKEN_FILE`` names;
3. the config file (``token``, or ``token_file``: a path read at each call, e.g. a mesh's ``data/auth/token``);
4. ``data/auth/token`` under ``DOCUTHINKER_DATA_DIR`` (default ``data``, relative to the current directory):
   what ``make run`` leaves in a checkout.

The gateway: ``--gateway`` or ``DOCUTHINKER_GATEWAY_URL``, else the config file's ``gateway``, else
http://127.0.0.1:8080. The config file is ``DOCUTHINKER_CONFIG``, else
``$XDG_CONFIG_HOME/docuthinker/config.toml`` (``~/.config/...``), TOML, written 0600 (it may hold a token).
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import tomllib
from dataclasses import dataclass
from typing import Any

from docuthinker_cli.client import DEFAULT_GATEWAY

KEYS = ("gateway", "token", "token_file")


def config_path() -> pathlib.Path:
    named = os.environ.get("DOCUTHINKER_CONFIG")
    if named:
        return pathlib.Path(named).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(pathlib.Path.home() / ".config")
    return pathlib.Path(base) / "docuthinker" / "config.toml"


def load() -> dict[str, str]:
    path = config_path()
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc}") from None
    return {k: str(v) for k, v in data.items() if k in KEYS and v}


def save(values: dict[str, str]) -> pathlib.Path:
    """Writes ``values`` (only the known keys) readable by this user alone."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    # TOML basic strings take JSON's escapes for what a URL, a path or a token can hold.
    text = "".join(f"{k} = {json.dumps(values[k])}\n" for k in KEYS if values.get(k))
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(text)
    os.chmod(path, 0o600)
    return path


class ConfigError(Exception):
    pass


@dataclass(frozen=True)
class Found:
    value: str | None
    source: str
    """Where it came from, in words (for ``docuthinker config`` and error hints)."""


def _read_token(path: pathlib.Path) -> str | None:
    try:
        return path.expanduser().read_text().strip() or None
    except OSError:
        return None


def find_token(explicit: str | None) -> Found:
    if explicit:
        return Found(explicit, "--token or DOCUTHINKER_TOKEN")
    named = os.environ.get("DOCUTHINKER_TOKEN_FILE")
    if named:
        return Found(_read_token(pathlib.Path(named)), f"the file DOCUTHINKER_TOKEN_FILE names ({named})")
    stored = load()
    if stored.get("token"):
        return Found(stored["token"], f"the config file ({config_path()})")
    if stored.get("token_file"):
        return Found(_read_token(pathlib.Path(stored["token_file"])),
                     f"token_file {stored['token_file']} of the config file ({config_path()})")
    local = pathlib.Path(os.environ.get("DOCUTHINKER_DATA_DIR", "data")) / "auth" / "token"
    token = _read_token(local)
    return Found(token, f"{local} (left by make run)" if token else "nowhere")


def find_gateway(explicit: str | None) -> Found:
    if explicit:
        return Found(explicit, "--gateway or DOCUTHINKER_GATEWAY_URL")
    stored = load().get("gateway")
    if stored:
        return Found(stored, f"the config file ({config_path()})")
    return Found(DEFAULT_GATEWAY, "the default")


def claims(token: str) -> dict[str, Any]:
    """A JWT's claims, unverified (for showing who a token is; the gateway verifies it)."""
    try:
        payload = token.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return {}


NO_TOKEN_HINT = ("no bearer token was found: run `docuthinker login` (it asks for one, or --token-file PATH), or set "
                 "DOCUTHINKER_TOKEN (make run prints one and leaves it in data/auth/token)")
