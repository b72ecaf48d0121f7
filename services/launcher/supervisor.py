"""Keeps the local mesh up: a child that dies is restarted with backoff, within a restart budget.

Before, any child that died (a kill, the OOM killer) stopped all five processes. Now the others
keep serving while the dead one is restarted (Envoy's active health checks route around it
meanwhile, so callers of other services never notice), and why it died is logged: its exit
code, the signal, or the kernel's kill at its memory ceiling. A child that keeps dying is
restarted after ``restart_initial_s``, doubled per death, at most ``restart_max_s`` apart, and
at most ``restart_budget`` times within ``restart_window_s``; past that it stays down and is
reported as given up. The state is published through ``services.runtime.supervision`` (``<data_dir>/supervisor.json``,
replaced atomically), which the orchestrator's ``GetHealth`` (``/v1/health``) folds into each service's entry.
"""

from __future__ import annotations

import pathlib
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Protocol

from services.launcher.memory_ceiling import MemoryCeiling
from services.launcher.settings import LauncherSettings
from services.runtime import supervision
from services.runtime.backoff import Backoff


class Supervised(Protocol):
    """What the supervisor needs of the mesh (``Mesh`` satisfies it)."""

    data_dir: pathlib.Path

    def exited(self) -> list[str]: ...

    def reap(self, name: str) -> int | None:
        """Forgets a child that has exited and returns its exit status (negative: the signal)."""
        ...

    def respawn(self, name: str) -> int:
        """Starts the child again with the command it last ran; returns its pid."""
        ...


@dataclass
class ChildState:
    state: str = "running"
    """running, restarting (waiting out its backoff) or given_up (restart budget spent)."""
    restarts: int = 0
    last_exit: str = ""
    last_exit_time: float = 0.0
    next_start_time: float = 0.0
    deaths: list[float] = field(default_factory=list)


def describe_exit(returncode: int | None, oom_killed: bool, ceiling_mb: int = 0) -> str:
    if oom_killed:
        return f"killed by the kernel at its memory ceiling ({ceiling_mb} MB)"
    if returncode is None:
        return "exited"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        if -returncode == signal.SIGKILL:
            return f"killed by {name} (kill -9, or the kernel's OOM killer)"
        return f"killed by {name}"
    return f"exited with code {returncode}"


class Supervisor:
    def __init__(
        self,
        mesh: Supervised,
        settings: LauncherSettings,
        ceiling: MemoryCeiling | None = None,
        report: Callable[[str], None] = lambda line: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._mesh = mesh
        self._settings = settings
        # One launcher restarting its own children: no other replica to spread from, so the exact schedule.
        self._backoff = Backoff(settings.restart_initial_s, settings.restart_max_s, jitter=0)
        self._ceiling = ceiling
        self._report = report
        self._clock = clock
        self._children: dict[str, ChildState] = {}
        self._oom_seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stopped = False

    @property
    def state_file(self) -> pathlib.Path:
        return supervision.state_path(self._mesh.data_dir)

    def states(self) -> dict[str, ChildState]:
        with self._lock:
            return {name: ChildState(**asdict(child)) for name, child in self._children.items()}

    def watch(self, names: list[str]) -> None:
        with self._lock:
            for name in names:
                self._children.setdefault(name, ChildState())
        self._write()

    def stop(self) -> None:
        """Stops supervising (call before stopping the mesh, so its exits are not taken for deaths)."""
        self._stopped = True
        supervision.withdraw(self._mesh.data_dir)

    def poll_once(self) -> None:
        """Reaps dead children and restarts those due. Call it from the thread that started the mesh:
        children die with the thread that spawned them (PR_SET_PDEATHSIG), so restarts must come from
        the same long-lived thread, never a helper thread."""
        if self._stopped:
            return
        now = self._clock()
        changed = False
        for name in self._mesh.exited():
            code = self._mesh.reap(name)
            self._died(name, code, now)
            changed = True
        with self._lock:
            due = [n for n, c in self._children.items() if c.state == "restarting" and c.next_start_time <= now]
        for name in due:
            pid = self._mesh.respawn(name)
            with self._lock:
                child = self._children[name]
                child.state, child.restarts = "running", child.restarts + 1
            self._report(f"supervisor: restarted {name} (pid {pid}, restart {child.restarts})")
            changed = True
        if changed:
            self._write()

    def _died(self, name: str, code: int | None, now: float) -> None:
        oom = False
        if self._ceiling is not None:
            kills = self._ceiling.oom_kills(name)
            oom, self._oom_seen[name] = kills > self._oom_seen.get(name, 0), kills
        why = describe_exit(code, oom, self._ceiling.limit_of(name) if self._ceiling is not None else 0)
        s = self._settings
        with self._lock:
            child = self._children.setdefault(name, ChildState())
            child.deaths = [t for t in child.deaths if now - t < s.restart_window_s] + [now]
            child.last_exit, child.last_exit_time = why, now
            if len(child.deaths) > s.restart_budget:
                child.state = "given_up"
                self._report(f"supervisor: {name} {why}; {len(child.deaths)} deaths in {s.restart_window_s:.0f} s,"
                             " past the restart budget: it stays down")
                return
            delay = self._backoff.delay_s(len(child.deaths))
            child.state, child.next_start_time = "restarting", now + delay
        self._report(f"supervisor: {name} {why}; restarting in {delay:.1f} s")

    def _write(self) -> None:
        with self._lock:
            now = self._clock()
            children = {name: {k: v for k, v in asdict(child).items() if k != "deaths"}
                        for name, child in self._children.items()}
        supervision.publish(self._mesh.data_dir, now, children)
