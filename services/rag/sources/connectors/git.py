"""A Git repository's branch, through the git CLI: a bare cache repository per source (under the replica's data
directory) is fetched from the remote, then the branch's tree is listed locally (``git ls-tree``): each file's
change token is its blob id, so an unchanged commit costs one fetch and nothing else. Credentials for http(s)
go through ``GIT_ASKPASS`` (never in the URL or the cache's config); no system or user configuration is read,
no prompt waits for a terminal, and only http(s), git:// and file:// (under the allowed roots) are allowed."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from services.rag.sources.connectors.base import Item, Listing, Part, ingestible
from services.rag.sources.connectors.folder import allowed_folder
from services.rag.sources.model import (
    GitConfig,
    SourceAuthFailed,
    SourceMissing,
    SourceRefused,
    SourceUnreachable,
)

ASKPASS = """#!/bin/sh
case "$1" in
  Username*) printf '%s\\n' "$DOCUTHINKER_GIT_USERNAME" ;;
  *) printf '%s\\n' "$DOCUTHINKER_GIT_PASSWORD" ;;
esac
"""
_AUTH = re.compile(r"Authentication failed|could not read Username|could not read Password|HTTP 401|HTTP 403|"
                   r"returned error: 40[13]|Permission denied", re.I)
_MISSING = re.compile(r"not found|does not appear to be a git repository|couldn't find remote ref|"
                      r"Repository not found|HTTP 404|returned error: 404|No such file", re.I)
_TREE = re.compile(r"^(\d{6}) (\w+) ([0-9a-f]+)\s+(-|\d+)\t(.*)$")
REF = "refs/docuthinker/source"


def check_url(url: str, roots: Sequence[pathlib.Path]) -> str:
    """The URL as git should see it (SOURCE_NOT_ALLOWED for another scheme or a local path outside the roots)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        raise SourceRefused(f"Git URL {url!r} cannot be read: {exc}") from exc
    if parts.scheme in ("http", "https", "git"):
        if not host:
            raise SourceRefused(f"Git URL {url!r} names no host")
        if parts.username or parts.password:
            raise SourceRefused("put the Git username in the source's username and the password or token in its "
                                "credential, not in the URL", reason="CREDENTIAL_IN_URL")
        return url
    if parts.scheme == "file":
        return "file://" + str(allowed_folder(parts.path, roots))
    if not parts.scheme and url.startswith("/"):
        return "file://" + str(allowed_folder(url, roots))
    raise SourceRefused(f"Git URL {url!r}: only http(s)://, git:// and file:// (under the allowed roots) are synced")


class GitConnector:
    def __init__(self, config: GitConfig, password: str, cache: pathlib.Path, roots: Sequence[pathlib.Path],
                 timeout_s: float, max_items: int) -> None:
        self._config = config
        self._password = password
        self._cache = cache
        self._roots = roots
        self._timeout_s = timeout_s
        self._max_items = max_items
        self._commit = ""

    def _env(self) -> dict[str, str]:
        home = self._cache.parent
        askpass = home / "askpass.sh"
        if not askpass.exists():
            home.mkdir(parents=True, exist_ok=True)
            askpass.write_text(ASKPASS)
            askpass.chmod(0o700)
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": str(askpass), "LC_ALL": "C",
            "DOCUTHINKER_GIT_USERNAME": self._config.username, "DOCUTHINKER_GIT_PASSWORD": self._password,
        }

    def _git(self, *args: str, network: bool = False) -> bytes:
        command = ["git", "-c", "protocol.file.allow=always", "-c", "credential.helper=", "-c", "core.askPass=",
                   "--git-dir", str(self._cache), *args]
        if network:
            command[1:1] = ["-c", f"http.lowSpeedTime={int(self._timeout_s)}", "-c", "http.lowSpeedLimit=1"]
        try:
            done = subprocess.run(command, capture_output=True, env=self._env(), timeout=self._timeout_s * 4,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise SourceUnreachable(f"git {args[0]} of {self._config.url} timed out") from exc
        if done.returncode != 0:
            error = done.stderr.decode(errors="replace").strip()
            message = f"git {args[0]} of {self._config.url} failed: {error[-400:]}"
            if not network:
                raise RuntimeError(message)
            if _AUTH.search(error):
                raise SourceAuthFailed(message)
            if _MISSING.search(error):
                raise SourceMissing(message)
            raise SourceUnreachable(message)
        return done.stdout

    def scan(self, cursor: dict[str, Any]) -> Listing:
        url = check_url(self._config.url, self._roots)
        if not (self._cache / "HEAD").exists():
            self._cache.mkdir(parents=True, exist_ok=True)
            self._git("init", "--bare", "--quiet")
        branch = self._config.branch or "HEAD"
        self._git("fetch", "--quiet", "--no-tags", "--force", url, f"{branch}:{REF}", network=True)
        self._commit = self._git("rev-parse", REF).decode().strip()
        items: list[Item] = []
        for line in self._git("ls-tree", "-r", "-l", "-z", self._commit).decode(errors="replace").split("\0"):
            match = _TREE.match(line)
            if match is None or match[2] != "blob" or match[1] == "120000":  # files only: no links, no submodules
                continue
            path = match[5]
            name = path.rsplit("/", 1)[-1]
            if any(p.startswith(".") for p in path.split("/")[:-1]) or not ingestible(name) \
                    or not self._config.selects(path):
                continue
            items.append(Item(path, match[3], name, 0 if match[4] == "-" else int(match[4])))
            if len(items) > self._max_items:
                raise SourceRefused(f"the branch holds more than {self._max_items} files", reason="SOURCE_TOO_LARGE")
        return Listing(items, {"commit": self._commit, "branch": self._config.branch})

    def fetch(self, item: Item) -> list[Part]:
        return [Part("", item.name, "", self._git("cat-file", "blob", item.token))]

    def close(self) -> None:
        return None
