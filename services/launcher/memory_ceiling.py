"""A memory ceiling per child process, as a cgroup under the launcher's own.

``RLIMIT_AS`` and ``RLIMIT_DATA`` cannot be used: LadybugDB reserves tens of GB of address space
per database up front (measured: the database refuses to open under a 1.5 GB ``RLIMIT_DATA``),
and torch maps large arenas. A memory cgroup counts what is really resident, and when a child
passes its limit the kernel kills that child alone (SIGKILL, counted in ``oom_kill``), not the
host or its neighbours. Both cgroup v2 (``memory.max``) and v1 (``memory.limit_in_bytes``) are
handled. Where no writable cgroup exists (an unprivileged user, a read-only hierarchy) the
ceiling is off and ``available`` says why; in Kubernetes the container's memory limit does this.
"""

from __future__ import annotations

import os
import pathlib
import re
from collections.abc import Mapping

CGROUP_ROOT = pathlib.Path("/sys/fs/cgroup")


def _own_cgroup() -> tuple[pathlib.Path, str] | None:
    """The directory of this process's memory cgroup and the limit file's name there."""
    try:
        lines = pathlib.Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        hierarchy, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return CGROUP_ROOT / "memory" / path.lstrip("/"), "memory.limit_in_bytes"
    for line in lines:
        if line.startswith("0::"):
            base = CGROUP_ROOT / line[3:].lstrip("/")
            if (CGROUP_ROOT / "cgroup.controllers").exists() and "memory" in _read(base / "cgroup.controllers"):
                return base, "memory.max"
            unified = CGROUP_ROOT / "unified" / line[3:].lstrip("/")
            if "memory" in _read(unified / "cgroup.controllers"):
                return unified, "memory.max"
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(path: pathlib.Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


class MemoryCeiling:
    """One cgroup per child name, ``limit_mb`` each (``limits_mb`` names other limits for some children, e.g.
    Envoy's); the child joins its cgroup before exec (``child_exec``)."""

    def __init__(self, limit_mb: int, prefix: str = "docuthinker", limits_mb: Mapping[str, int] | None = None) -> None:
        self.limit_mb = limit_mb
        self._limits_mb = dict(limits_mb or {})
        self.reason = ""
        self._dirs: dict[str, pathlib.Path] = {}
        self._family = prefix
        self._prefix = f"{prefix}-{os.getpid()}"
        found = _own_cgroup() if limit_mb > 0 else None
        if limit_mb <= 0:
            self.reason = "no ceiling configured"
        elif found is None:
            self.reason = "no memory cgroup found for this process"
        else:
            self._base, self._limit_file = found
            if not os.access(self._base, os.W_OK):
                self.reason = f"{self._base} is not writable"

    @property
    def available(self) -> bool:
        return not self.reason

    def limit_of(self, name: str) -> int:
        """The ceiling of child ``name`` in MB."""
        return self._limits_mb.get(name, self.limit_mb)

    def prepare(self, name: str) -> pathlib.Path | None:
        """Creates (or reuses) the child's cgroup with its limit; None when the ceiling is off (or 0 for this child)."""
        if not self.available or self.limit_of(name) <= 0:
            return None
        if name in self._dirs:
            return self._dirs[name]
        directory = self._base / f"{self._prefix}-{re.sub(r'[^a-z0-9_-]', '_', name.lower())}"
        try:
            directory.mkdir(exist_ok=True)
            (directory / self._limit_file).write_text(str(self.limit_of(name) * 1024 * 1024))
        except OSError as exc:
            self.reason = f"cannot create a cgroup under {self._base}: {exc}"
            return None
        self._dirs[name] = directory
        return directory

    def oom_kills(self, name: str) -> int:
        """How many times the kernel killed this child for passing its ceiling."""
        directory = self._dirs.get(name)
        if directory is None:
            return 0
        for file in ("memory.oom_control", "memory.events"):
            match = re.search(r"^oom_kill (\d+)", _read(directory / file), re.MULTILINE)
            if match:
                return int(match.group(1))
        return 0

    def remove_stale(self) -> list[str]:
        """Removes the cgroups a launcher that is gone left behind (it was SIGKILLed, so its ``remove`` never
        ran): ``<prefix>-<pid>-<child>`` under this launcher's own cgroup whose pid is no live process. One
        that still holds processes (children that outlived their launcher) is left, and named in the log
        line the launcher prints. Returns the names removed."""
        if not self.available:
            return []
        removed: list[str] = []
        pattern = re.compile(rf"^{re.escape(self._family)}-(\d+)-")
        try:
            entries = list(self._base.iterdir())
        except OSError:
            return []
        for directory in entries:
            match = pattern.match(directory.name)
            if not match or not directory.is_dir() or _alive(int(match.group(1))):
                continue
            try:
                directory.rmdir()  # only an empty cgroup can go: its processes are gone
            except OSError:
                continue
            removed.append(directory.name)
        return removed

    def remove(self) -> None:
        """Removes the (empty) cgroups once every child has exited."""
        for directory in self._dirs.values():
            try:
                directory.rmdir()
            except OSError:
                pass
        self._dirs.clear()
