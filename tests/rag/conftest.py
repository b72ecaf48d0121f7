"""Fixtures of the RAG ingestion tests: a runtime (real stores) in a temporary data directory."""

from __future__ import annotations

import pathlib

import pytest

from services.rag.runtime import RagRuntime
from services.rag.settings import RagSettings

from .fakes import HashEmbedder

MAX_UPLOAD = 2 * 1024 * 1024


@pytest.fixture
def open_runtime(tmp_path: pathlib.Path, storage):
    """Opens runtimes over one data directory, or one PostgreSQL database with ``store_backend``
    (reopening = a restart); closes them all at the end."""
    opened: list[RagRuntime] = []

    def factory(embedder=None, **settings) -> RagRuntime:
        # In-process parsing unless a test asks for the worker processes (test_parser_isolation.py does):
        # each worker costs about a CPU second to start.
        defaults = {"keyword_refresh_delay_s": 0.0, "embed_progress_every": 4, "parser_isolation": False}
        runtime = RagRuntime.open(
            tmp_path, RagSettings(**{**defaults, **settings}), MAX_UPLOAD, embedder or HashEmbedder(),
            storage=storage,
        )
        opened.append(runtime)
        return runtime

    yield factory
    for runtime in opened:
        if runtime.pipeline.parsers is not None:
            runtime.pipeline.parsers.close()
        try:
            runtime.metadata.close()
        except Exception:  # noqa: BLE001 - already closed
            pass
