"""Shared fixtures. ``mesh`` starts the real mesh (four service processes and Envoy) once per session."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

# pytest puts tests/ on sys.path (this conftest has no package), where tests/gateway would shadow the
# top-level `gateway` package and its submodules resolve through the editable install (another
# checkout's code in a worktree): the checkout's root comes first.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import services  # noqa: F401  (sets OpenMP's wait policy before torch, faiss or llama.cpp load it)

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
             "DOCUTHINKER_RAG_GRAPH_BACKOFF_INITIAL_S": "0.5", "DOCUTHINKER_RAG_GRAPH_BACKOFF_MAX_S": "2"}
    with Mesh(data_dir=root / "data", log_dir=root / "logs", auto_ports=True, extra_env=extra) as running:
        yield running


@pytest.fixture(scope="session")
def shared_dir() -> pathlib.Path:
    """../shared beside the checkout (evaluation data and real-world fixtures; CI has it)."""
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: CI-only tests need ../shared beside the checkout")
    return SHARED


def pytest_configure(config: pytest.Config) -> None:
    # `make test-unit` sets this: a test that loads a real model without the `models` mark fails at
    # once instead of quietly slowing the inner loop.
    if os.environ.get("DOCUTHINKER_TEST_NO_MODELS") == "1":
        _refuse_real_models()


def _refuse_real_models() -> None:
    from services.models import embedder
    from services.nlp import spacy_pipeline
    from services.providers import local_model
    from services.speech import transcriber

    def refuse(*args, **kwargs):
        raise RuntimeError("this test loads a real model: mark it @pytest.mark.models (make test-unit runs without)")

    embedder.Embedder.__init__ = refuse
    spacy_pipeline._load = refuse
    local_model.LocalModel.__init__ = refuse
    transcriber.WhisperTranscriber._load = refuse


# Fixtures that load a real model, by the directory whose conftest defines them.
_MODEL_FIXTURES = {"nlp": {"pipeline", "nlp_server"}, "speech": {"tiny", "base"}, "rag_answers": {"rag"}}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        folder = pathlib.Path(str(item.path)).parent.name
        if _MODEL_FIXTURES.get(folder, set()) & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.models)
