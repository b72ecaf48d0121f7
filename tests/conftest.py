"""Shared fixtures. ``mesh`` starts the real mesh (four service processes and Envoy) once per session."""

from __future__ import annotations

import getpass
import os
import pathlib
import shutil
import sys
import tempfile

import pytest

# pytest puts tests/ on sys.path (this conftest has no package), where tests/gateway would shadow the
# top-level `gateway` package and its submodules resolve through the editable install (another
# checkout's code in a worktree): the checkout's root comes first.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import services  # noqa: F401  (sets OpenMP's wait policy before torch, faiss or llama.cpp load it)

# isort: split

# The graph tests (LadybugDB) and the local-model tests (llama.cpp via xllamacpp) share this pytest
# process, and xllamacpp's module initialisation aborts with std::bad_alloc once a LadybugDB database
# has been opened in the process (reproduced in isolation). Importing it first avoids that. The
# services never meet this: the graph service, the only user of LadybugDB, is its own process.
import xllamacpp  # noqa: F401  (must precede any LadybugDB database)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(scope="session")
def mesh(tmp_path_factory):
    from services.launcher.mesh import Mesh

    root = tmp_path_factory.mktemp("mesh")
    extra = {"DOCUTHINKER_SHUTDOWN_GRACE_S": "2", "DOCUTHINKER_RAG_GRAPH_POLL_INTERVAL_S": "0.5",
             "DOCUTHINKER_RAG_GRAPH_BACKOFF_INITIAL_S": "0.5", "DOCUTHINKER_RAG_GRAPH_BACKOFF_MAX_S": "2",
             # Sources the tests (or the REST fuzzer) configure reach loopback servers only, never out.
             "DOCUTHINKER_RAG_SOURCES_ALLOWED_HOSTS": '["127.0.0.1", "localhost"]'}
    with Mesh(data_dir=root / "data", log_dir=root / "logs", auto_ports=True, extra_env=extra) as running:
        yield running


STORE_BACKENDS = ["embedded", "postgres"]


def pytest_generate_tests(metafunc):
    """Modules marked ``store_backends`` run each test that opens stores once per backend: the
    congruence suites (the same assertions on the embedded stores and on PostgreSQL)."""
    marker = metafunc.definition.get_closest_marker("store_backends")
    if "store_backend" in metafunc.fixturenames and marker:
        metafunc.parametrize("store_backend", list(marker.args) or STORE_BACKENDS, indirect=True)


@pytest.fixture(scope="session")
def postgres_server():
    """One real PostgreSQL 16 with pgvector (PyPI pgserver) for the session; tests take databases of it.

    Its directory is not under pytest's basetemp: concurrent pytest runs of the same user prune
    old basetemps, which pulled the data directory from under a running server."""
    import shutil
    import tempfile

    from services.storage.local_server import LocalPostgres

    root = pathlib.Path(tempfile.mkdtemp(prefix="docuthinker-pg-"))
    server = LocalPostgres(root, durable=False)
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_dsn(postgres_server):
    """A fresh database for one test (migrated when the first store opens it), dropped afterwards."""
    import uuid

    from services.storage.postgres import close_shared

    name = f"test_{uuid.uuid4().hex[:12]}"
    dsn = postgres_server.create_database(name)
    yield dsn
    close_shared(dsn)
    postgres_server.drop_database(name)


@pytest.fixture
def store_backend(request) -> str:
    """``embedded``, or each backend in turn in modules marked ``store_backends`` (``postgres-bm25``: the
    PostgreSQL backend with the BM25 keyword cache, for suites that name it)."""
    return getattr(request, "param", "embedded")


@pytest.fixture
def storage(store_backend, request):
    """``StorageSettings`` of the backend under test (a fresh PostgreSQL database for ``postgres``)."""
    from services.storage.settings import StorageSettings

    if store_backend in ("embedded", "embedded-chroma"):  # the latter: vectors on Chroma (``open_runtime``)
        return StorageSettings(store_backend="embedded")
    keyword = "bm25" if store_backend == "postgres-bm25" else "fts"
    return StorageSettings(store_backend="postgres", postgres_dsn=request.getfixturevalue("postgres_dsn"),
                           postgres_keyword=keyword)


@pytest.fixture(scope="session")
def open_gateway(mesh, tmp_path_factory) -> str:
    """Base URL of a second Envoy over the session's services with auth explicitly off (the session mesh has it
    on, as ``make run`` does): x-tenant-id decides the tenant there, and every caller is an admin."""
    from gateway.auth import AuthSettings

    with mesh.gateway_beside(tmp_path_factory.mktemp("open-gateway"), AuthSettings(enabled=False)) as base:
        yield base


@pytest.fixture(scope="session")
def shared_dir() -> pathlib.Path:
    """../shared beside the checkout (evaluation data and real-world fixtures; CI has it)."""
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: CI-only tests need ../shared beside the checkout")
    return SHARED


def pytest_addoption(parser: pytest.Parser) -> None:
    from tests.session_report import SessionReport

    SessionReport.addoption(parser)


KEPT_BASETEMPS = 3
"""Ended sessions whose temporary directories (mesh logs, data) are kept for a look after a failure."""


def _private_basetemp(config: pytest.Config) -> None:
    """Gives this session a temporary directory that no other session deletes.

    pytest numbers sessions' directories (pytest-of-<user>/pytest-N) and each new session prunes all
    but the last few; with several sessions of one user at once (a shared machine, a long e2e run
    beside short ones) a running session's directory went, and with it its meshes' data and
    PostgreSQL's socket (a test_replicas run failed with "connection refused" after 58 other sessions
    had started). Here a session's directory is named after its process, and only the directories of
    sessions no longer running are pruned."""
    if config.option.basetemp or hasattr(config, "workerinput"):
        return
    root = pathlib.Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}" / "docuthinker"
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    ended = []
    for path in root.glob("session-*"):
        pid = path.name.removeprefix("session-")
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            ended.append(path)
        except (PermissionError, OverflowError):
            continue
    for path in sorted(ended, key=lambda p: p.stat().st_mtime)[:-KEPT_BASETEMPS]:
        shutil.rmtree(path, ignore_errors=True)
    config.option.basetemp = str(root / f"session-{os.getpid()}")


def pytest_configure(config: pytest.Config) -> None:
    from tests.session_report import configure

    _private_basetemp(config)
    configure(config)  # --session-report PATH: outcomes, durations and load as JSON
    # `make test-unit` sets this: a test that loads a real model without the `models` mark fails at
    # once instead of quietly slowing the inner loop.
    if os.environ.get("DOCUTHINKER_TEST_NO_MODELS") == "1":
        _refuse_real_models()


def _refuse_real_models() -> None:
    from services.models import embedder, onnx_embedder, onnx_export
    from services.nlp import spacy_pipeline
    from services.providers import local_model
    from services.speech import transcriber

    def refuse(*args, **kwargs):
        raise RuntimeError("this test loads a real model: mark it @pytest.mark.models (make test-unit runs without)")

    embedder.Embedder.__init__ = refuse
    onnx_embedder.OnnxEmbedder.__init__ = refuse
    onnx_export.ensure_exported = refuse  # the export loads the PyTorch model too
    spacy_pipeline._load = refuse
    local_model.LocalModel.__init__ = refuse
    transcriber.WhisperTranscriber._load = refuse


# Fixtures that load a real model, by the directory whose conftest defines them.
_MODEL_FIXTURES = {"nlp": {"pipeline", "nlp_server"}, "speech": {"tiny", "base"}, "answers": {"rag"}}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        folder = pathlib.Path(str(item.path)).parent.name
        if _MODEL_FIXTURES.get(folder, set()) & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.models)
