"""The data directory is its owner's alone: files 0600, directories 0700.

Documents, their text, vectors, tokens and the mesh credential live under ``DOCUTHINKER_DATA_DIR``; with
the default umask they were created 0644 in 0755 directories, readable by every local user. Every
process of the mesh (each service, the launcher) sets the umask 077 before it writes anything, and the
first process to start on a data directory from before that tightens what is already there, once
(``.private-modes`` records that it was done).
"""

from __future__ import annotations

import logging
import os
import pathlib
import stat

PRIVATE_UMASK = 0o077
MARKER = ".private-modes"

log = logging.getLogger("docuthinker.runtime")


def private_umask() -> int:
    """Files and directories this process creates from now on are its owner's alone; the previous umask."""
    return os.umask(PRIVATE_UMASK)


def make_private(data_dir: pathlib.Path) -> int:
    """Creates ``data_dir`` (0700), and on a directory from before private modes removes the group and other
    bits of everything in it; returns how many entries changed."""
    root = pathlib.Path(data_dir)
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    changed = _restrict(root)
    if (root / MARKER).exists():
        return changed
    for directory, names, files in os.walk(root):
        for name in [*names, *files]:
            changed += _restrict(pathlib.Path(directory) / name)
    (root / MARKER).touch(mode=0o600)
    if changed:
        log.info("data directory made private", extra={"fields": {"data_dir": str(root), "changed": changed}})
    return changed


def _restrict(path: pathlib.Path) -> int:
    try:
        mode = path.lstat().st_mode
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)) or not mode & 0o077:
            return 0  # links, sockets and FIFOs keep theirs (a link's mode is its target's)
        path.chmod(stat.S_IMODE(mode) & 0o700)
        return 1
    except OSError:  # vanished meanwhile, or not ours
        return 0
