"""Fixtures of the RAG ingestion tests: a runtime (real stores) in a temporary data directory."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from services.rag.runtime import RagRuntime
from services.rag.settings import RagSettings

from .fakes import HashEmbedder

MAX_UPLOAD = 2 * 1024 * 1024


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory) -> Iterator[str]:
    """One real Chroma server for the session (the package's own ``chroma run``, as a user would start it), on a
    free loopback port with its own data directory; its URL. Tests keep apart by collection prefix."""
    from services.launcher.probes import free_port

    port = free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    chroma = pathlib.Path(sys.executable).with_name("chroma")
    with open(data / "server.log", "wb") as out:
        server = subprocess.Popen([str(chroma), "run", "--path", str(data / "db"), "--host", "127.0.0.1",
                                   "--port", str(port)], stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"chroma run did not answer: {(data / 'server.log').read_text()[-2000:]}")
            time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture
def open_runtime(tmp_path: pathlib.Path, storage, store_backend, request):
    """Opens runtimes over one data directory, or one PostgreSQL database with ``store_backend``
    (reopening = a restart); closes them all at the end. ``embedded-chroma``: the embedded stores with the
    vectors on the session's Chroma server, under a prefix of this test's own."""
    opened: list[RagRuntime] = []
    chroma = {}
    if store_backend == "embedded-chroma":
        chroma = {"vector_backend": "chroma", "chroma_url": request.getfixturevalue("chroma_server"),
                  "chroma_prefix": f"t{uuid.uuid4().hex[:16]}"}

    def factory(embedder=None, **settings) -> RagRuntime:
        # In-process parsing unless a test asks for the worker processes (test_parser_isolation.py does):
        # each worker costs about a CPU second to start.
        defaults = {"keyword_refresh_delay_s": 0.0, "embed_progress_every": 4, "parser_isolation": False, **chroma}
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
