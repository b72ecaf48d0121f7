"""Fixtures of the orchestrator tests: a fresh database (SQLite, or PostgreSQL in modules marked
``store_backends``) and a controllable clock."""

from __future__ import annotations

import pytest

from services.orchestrator.database import Database, SqlDatabase, open_database
from tests.support.fake_services import FakeMesh

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
def open_db(db_path, storage):
    """Opens the test's database (again: a restart), on the backend under test."""
    opened = []

    def open_() -> SqlDatabase:
        database = Database(db_path) if not storage.postgres else open_database(db_path.parent, storage)
        opened.append(database)
        return database

    yield open_
    for database in opened:
        database.close()


@pytest.fixture
def db(open_db):
    return open_db()


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


@pytest.fixture
async def stub(make_orchestrator):
    orchestrator = make_orchestrator()
    orchestrator.openai.default = "I am the remote model."
    return await orchestrator.start()
