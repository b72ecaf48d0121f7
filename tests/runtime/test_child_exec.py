"""The exec shim: the child runs in place (same pid, own session) and dies with the process that spawned it."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

from services.runtime import child_exec
from services.runtime.child_exec import spawn_argv


def _gone(pid: int) -> bool:
    """Exited: no process, or a zombie nobody has reaped yet."""
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_the_command_replaces_the_shim_in_its_own_session():
    proc = subprocess.run(
        spawn_argv([sys.executable, "-c", "import os; print(os.getpid(), os.getsid(0), os.getpgrp())"]),
        start_new_session=True, capture_output=True, text=True, timeout=60, cwd="/",
    )
    assert proc.returncode == 0, proc.stderr
    pid, session, group = map(int, proc.stdout.split())
    assert session == group == pid  # exec'd in place: signals sent to the Popen pid reach the command


def test_the_child_is_terminated_when_its_launcher_is_killed(tmp_path):
    launcher = textwrap.dedent(f"""
        import subprocess, sys, time
        sys.path.insert(0, {str(pathlib.Path(child_exec.__file__).parent)!r})
        from child_exec import spawn_argv
        child = subprocess.Popen(spawn_argv(["sleep", "120"]), start_new_session=True)
        print(child.pid, flush=True)
        time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", launcher], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and pathlib.Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")[0] != b"sleep":
        time.sleep(0.05)  # the shim has not exec'd yet
    assert not _gone(child)
    proc.kill()  # SIGKILL: nothing in the launcher runs, only the kernel's parent-death signal
    proc.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _gone(child):
        time.sleep(0.05)
    try:
        assert _gone(child), "the child outlived its launcher"
    finally:
        if not _gone(child):
            os.kill(child, signal.SIGKILL)


def _shim(*args: str) -> subprocess.CompletedProcess:
    # In a child of its own: the shim arms the parent-death signal on whatever process runs it.
    return subprocess.run([sys.executable, child_exec.__file__, *args], capture_output=True, text=True, timeout=60)


def test_an_orphaned_shim_exits_instead_of_running_unsupervised(tmp_path):
    marker = tmp_path / "ran"
    # --parent names a pid that is not the shim's parent: as if the launcher had died before the signal was armed
    proc = _shim("--parent", "1", "--", "touch", str(marker))
    assert proc.returncode == child_exec.ORPHANED and not marker.exists()


def test_no_command_is_a_usage_error():
    proc = _shim("--parent", str(os.getpid()))
    assert proc.returncode == 2 and "no command" in proc.stderr
