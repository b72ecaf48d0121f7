"""Starts a child that dies with its launcher, optionally inside a memory cgroup, without ``preexec_fn``.

``subprocess``'s ``preexec_fn`` runs Python in the forked copy of the launcher, between fork and exec.
The launcher is multi-threaded (gRPC, HTTP servers, model runtimes in the test process), and Python
documents that such a child can deadlock before exec on a lock another thread held at fork time. So the
set-up runs here instead, in a fresh interpreter that then execs the real command (same pid):
``spawn_argv`` builds the command line, and this file, run as a script, does the set-up. It imports
nothing of DocuThinker, so it works from any working directory.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import pathlib
import signal
import sys
from collections.abc import Sequence

_PR_SET_PDEATHSIG = 1
ORPHANED = 70
"""The exit status when the launcher was already gone by the time the death signal was armed."""


def spawn_argv(argv: Sequence[str], cgroup: pathlib.Path | None = None) -> list[str]:
    """``argv`` behind the shim: the child gets SIGTERM when the thread that spawned it exits (PR_SET_PDEATHSIG)
    and, given ``cgroup``, joins that memory cgroup before the real command starts. Popen it with
    ``start_new_session=True`` (its own process group, as the launcher's signals expect)."""
    shim = [sys.executable, __file__, "--parent", str(os.getpid())]
    if cgroup is not None:
        shim += ["--cgroup", str(cgroup)]
    return [*shim, "--", *argv]


def main(args: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="child_exec", description=__doc__)
    parser.add_argument("--parent", type=int, required=True, help="the launcher's pid")
    parser.add_argument("--cgroup", type=pathlib.Path, help="memory cgroup directory to join")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args(args)
    command = options.command[1:] if options.command[:1] == ["--"] else options.command
    if not command:
        parser.error("no command to run")
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != options.parent:  # the launcher died before the signal was armed: nobody would stop us
        sys.exit(ORPHANED)
    if options.cgroup is not None:  # before the exec, so the command's first allocation already counts
        (options.cgroup / "cgroup.procs").write_text(str(os.getpid()))
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
