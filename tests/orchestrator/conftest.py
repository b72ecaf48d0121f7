"""Fixtures of the orchestrator tests: a fresh SQLite database and a controllable clock."""

from __future__ import annotations

import pytest

from services.orchestrator.database import Database

from .fakes import FakeMesh
from .harness import Orchestrator


class Clock:
    def __init__(self, now: float = 1_750_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "orchestrator" / "orchestrator.db"


@pytest.fixture
def db(db_path):
    database = Database(db_path)
    yield database
    database.close()


@pytest.fixture
async def fake_mesh():
    mesh = await FakeMesh.start()
    yield mesh
    await mesh.stop()


@pytest.fixture
async def make_orchestrator(fake_mesh, tmp_path):
    made: list[Orchestrator] = []

    def make(**config) -> Orchestrator:
        orchestrator = Orchestrator(fake_mesh, tmp_path / "data", **config)
        made.append(orchestrator)
        return orchestrator

    yield make
    for orchestrator in made:
        await orchestrator.stop()
