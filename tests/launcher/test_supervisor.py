"""The launcher's supervisor over a fake process table, and the memory ceiling on a real child."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from services.launcher.memory_ceiling import MemoryCeiling
from services.launcher.settings import LauncherSettings
from services.launcher.supervisor import Supervisor, describe_exit
from services.runtime.child_exec import spawn_argv
from services.runtime.supervision import read_state


class FakeMesh:
    def __init__(self, data_dir) -> None:
        self.data_dir = data_dir
        self.dead: dict[str, int] = {}
        self.respawned: list[str] = []

    def exited(self) -> list[str]:
        return list(self.dead)

    def reap(self, name: str) -> int | None:
        return self.dead.pop(name)

    def respawn(self, name: str) -> int:
        self.respawned.append(name)
        return 1000 + len(self.respawned)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def rig(tmp_path):
    mesh, clock, lines = FakeMesh(tmp_path), Clock(), []
    settings = LauncherSettings(restart_initial_s=1.0, restart_max_s=4.0, restart_budget=3, restart_window_s=100.0)
    supervisor = Supervisor(mesh, settings, report=lines.append, clock=clock)
    supervisor.watch(["rag", "nlp", "graph", "orchestrator", "gateway"])
    return mesh, clock, lines, supervisor


def test_a_dead_child_is_restarted_after_its_backoff_and_the_others_are_left_alone(rig):
    mesh, clock, lines, supervisor = rig
    mesh.dead["nlp"] = -signal.SIGKILL
    supervisor.poll_once()
    assert mesh.respawned == []  # waits out the first backoff
    assert supervisor.states()["nlp"].state == "restarting"
    assert "nlp killed by SIGKILL" in lines[-1] and "restarting in 1.0 s" in lines[-1]
    clock.now += 1.0
    supervisor.poll_once()
    assert mesh.respawned == ["nlp"]
    state = read_state(mesh.data_dir)
    assert state["nlp"]["state"] == "running" and state["nlp"]["restarts"] == 1
    assert "SIGKILL" in state["nlp"]["last_exit"]
    assert all(state[n]["restarts"] == 0 for n in ("rag", "graph", "orchestrator", "gateway"))


def test_backoff_doubles_up_to_its_cap_then_the_budget_gives_up(rig):
    mesh, clock, lines, supervisor = rig
    for delay in (1.0, 2.0, 4.0):
        mesh.dead["graph"] = 1
        supervisor.poll_once()
        assert f"restarting in {delay:.1f} s" in lines[-1]
        clock.now += delay - 0.01
        supervisor.poll_once()
        assert mesh.respawned.count("graph") == len([d for d in (1.0, 2.0, 4.0) if d < delay])
        clock.now += 0.01
        supervisor.poll_once()
    assert mesh.respawned == ["graph"] * 3
    mesh.dead["graph"] = 1
    supervisor.poll_once()  # a fourth death in the window: past the budget of 3
    assert supervisor.states()["graph"].state == "given_up"
    assert "past the restart budget" in lines[-1] and "exited with code 1" in lines[-1]
    clock.now += 1_000
    supervisor.poll_once()
    assert mesh.respawned == ["graph"] * 3  # stays down
    assert json.loads((mesh.data_dir / "supervisor.json").read_text())["children"]["graph"]["state"] == "given_up"


def test_deaths_outside_the_window_do_not_count(rig):
    mesh, clock, lines, supervisor = rig
    for _ in range(6):
        mesh.dead["rag"] = -signal.SIGSEGV
        supervisor.poll_once()
        clock.now += 150.0  # longer than the window between deaths
        supervisor.poll_once()
    assert mesh.respawned == ["rag"] * 6
    assert "restarting in 1.0 s" in lines[-2]  # the backoff started afresh each time


def test_exit_descriptions():
    assert describe_exit(-signal.SIGKILL, False) == "killed by SIGKILL (kill -9, or the kernel's OOM killer)"
    assert describe_exit(-signal.SIGTERM, False) == "killed by SIGTERM"
    assert describe_exit(3, False) == "exited with code 3"
    assert describe_exit(-signal.SIGKILL, True, 512) == "killed by the kernel at its memory ceiling (512 MB)"


def test_no_state_file_reads_as_unsupervised(tmp_path):
    assert read_state(tmp_path) == {}
    (tmp_path / "supervisor.json").write_text("{not json")
    assert read_state(tmp_path) == {}


def test_stopping_removes_the_state_file(rig):
    mesh, clock, lines, supervisor = rig
    assert (mesh.data_dir / "supervisor.json").exists()
    supervisor.stop()
    assert not (mesh.data_dir / "supervisor.json").exists()


def test_a_child_past_its_memory_ceiling_is_killed_alone_and_counted():
    if os.geteuid() != 0:
        pytest.skip("memory cgroups need root; make run and CI run as root")
    ceiling = MemoryCeiling(limit_mb=128)
    assert ceiling.available, ceiling.reason  # as root the launcher must be able to make its cgroups
    try:
        cgroup = ceiling.prepare("hog")
        hog = subprocess.run(
            spawn_argv([sys.executable, "-c", "x = bytearray(512 * 1024 * 1024); print('survived')"], cgroup),
            capture_output=True, text=True, timeout=60,
        )
        assert hog.returncode == -signal.SIGKILL and "survived" not in hog.stdout
        assert ceiling.oom_kills("hog") == 1
        fine = subprocess.run(spawn_argv([sys.executable, "-c", "x = bytearray(16 * 1024 * 1024); print('ok')"], cgroup),
                              capture_output=True, text=True, timeout=60)
        assert fine.returncode == 0 and fine.stdout.strip() == "ok"
    finally:
        ceiling.remove()


def test_a_zero_ceiling_is_off():
    ceiling = MemoryCeiling(limit_mb=0)
    assert not ceiling.available and ceiling.prepare("rag") is None and ceiling.oom_kills("rag") == 0


def test_cgroups_a_killed_launcher_left_are_removed_at_the_next_start():
    if os.geteuid() != 0:
        pytest.skip("memory cgroups need root; make run and CI run as root")
    # A launcher that was SIGKILLed: its pid is no live process, its cgroups are still there.
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = MemoryCeiling(limit_mb=64)
    assert dead.available, dead.reason
    dead._prefix = f"docuthinker-{gone.pid}"
    left = [dead.prepare("rag"), dead.prepare("graph")]
    live = MemoryCeiling(limit_mb=64)
    mine = live.prepare("nlp")  # this launcher's own, in use
    try:
        removed = MemoryCeiling(limit_mb=64).remove_stale()
        assert sorted(removed) == sorted(p.name for p in left)
        assert not any(p.exists() for p in left) and mine.exists()
    finally:
        live.remove()
        dead.remove()
