"""The vector store's contract, on both backends through one fixture: the embedded store (vector log + FAISS) and
``ChromaVectors`` on a real Chroma server (``chroma run``, one per session). What only FAISS has (exact/HNSW
switching, snapshot files) stays in ``test_ann.py``; the chunk-index suite (``test_store.py``) runs over Chroma too
as its ``embedded-chroma`` backend."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import numpy as np
import pytest

from services.rag.documents import vector_key
from services.rag.settings import RagSettings
from services.rag.store import VectorStore
from services.rag.store.chroma_vectors import ChromaUnavailableError, ChromaVectors
from services.rag.store.vectors import EmbedderMismatchError

DIM = 16
IDENTITY = "test-model@1/fp32"

Store = VectorStore | ChromaVectors
Opener = Callable[..., Store]


def _vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def _ids(n: int, prefix: str) -> list[str]:
    """Chunk ids are hex digests, their tenant hashed in (``chunk_id_for``): each tenant's ids are its own."""
    return [f"{prefix}{i:014x}{'0' * 17}" for i in range(n)]


@pytest.fixture(params=["local", "chroma"])
def open_store(request, tmp_path) -> Opener:
    """Opens the backend's store (again: a restart) over one place: a data directory, or a collection prefix of
    this test's own on the session's Chroma server."""
    if request.param == "local":
        def local(identity: str = IDENTITY, check_identity: bool = True) -> Store:
            return VectorStore(tmp_path / "chroma", "test-model", DIM, identity=identity,
                               snapshot_dir=tmp_path / "ann", check_identity=check_identity)
        return local
    url, prefix = request.getfixturevalue("chroma_server"), f"t{uuid.uuid4().hex[:16]}"

    def chroma(identity: str = IDENTITY, check_identity: bool = True) -> Store:
        return ChromaVectors(url, "test-model", DIM, identity=identity, check_identity=check_identity, prefix=prefix)
    return chroma


def test_add_search_remove_round_trip_with_inner_product_scores(open_store: Opener) -> None:
    store = open_store()
    vectors, ids = _vectors(40, 1), _ids(40, "a")
    store.add("acme", "doc-1", ids[:20], vectors[:20])
    store.add("acme", "doc-2", ids[20:], vectors[20:])
    query = _vectors(1, 2)[0]
    hits = store.search("acme", query, 5)
    exact = np.argsort(-(vectors @ query))[:5]
    assert [key for key, _ in hits] == [vector_key(ids[i]) for i in exact]  # the same ranking on both backends
    assert [score for _, score in hits] == pytest.approx([float(vectors[i] @ query) for i in exact], abs=1e-5)
    assert len(store.search("acme", query, 100)) == 40
    assert store.search("acme", query, 0) == []

    gone = [ids[i] for i in exact[:2]]
    store.remove("acme", gone)
    after = {key for key, _ in store.search("acme", query, 100)}
    assert len(after) == 38 and not after & {vector_key(c) for c in gone}
    assert store.search("acme", query, 1)[0][0] == vector_key(ids[exact[2]])


def test_adding_an_id_again_replaces_its_vector(open_store: Opener) -> None:
    store = open_store()
    vectors, ids = _vectors(4, 3), _ids(3, "a")
    store.add("acme", "doc", ids, vectors[:3])
    store.add("acme", "doc", ids[:1], vectors[3:])
    assert np.allclose(store.vectors_of("acme", ids[:1])[ids[0]], vectors[3])
    assert store.search("acme", vectors[3], 1) == [(vector_key(ids[0]), pytest.approx(1.0, abs=1e-5))]
    assert len(store.search("acme", vectors[3], 10)) == 3


def test_the_allowed_keys_filter_returns_only_those_keys(open_store: Opener) -> None:
    store = open_store()
    vectors, ids = _vectors(30, 4), _ids(30, "a")
    store.add("acme", "doc", ids, vectors)
    query = vectors[0]  # ids[0] is the best hit, and is not allowed
    allowed = [vector_key(c) for c in ids[10:13]]
    hits = store.search("acme", query, 10, allowed)
    assert sorted(key for key, _ in hits) == sorted(allowed)
    assert [score for _, score in hits] == pytest.approx(
        sorted((float(vectors[i] @ query) for i in range(10, 13)), reverse=True), abs=1e-5)
    assert [key for key, _ in store.search("acme", query, 2, allowed)] == [key for key, _ in hits[:2]]
    assert store.search("acme", query, 10, []) == []
    assert store.search("acme", query, 10, [vector_key(_ids(1, "f")[0])]) == []  # a key nobody holds


def test_a_tenant_never_sees_another_tenants_vectors(open_store: Opener) -> None:
    store = open_store()
    a_vectors, a_ids = _vectors(10, 5), _ids(10, "a")
    b_vectors, b_ids = _vectors(10, 6), _ids(10, "b")
    store.add("acme", "doc", a_ids, a_vectors)
    store.add("globex", "doc", b_ids, b_vectors)
    a_keys, b_keys = {vector_key(c) for c in a_ids}, {vector_key(c) for c in b_ids}
    assert {key for key, _ in store.search("acme", b_vectors[0], 100)} == a_keys  # even its best match is B's
    assert {key for key, _ in store.search("globex", a_vectors[0], 100)} == b_keys
    assert store.search("acme", b_vectors[0], 100, sorted(b_keys)) == []  # the filter cannot reach across either
    assert store.search("initech", a_vectors[0], 100) == []
    assert set(store.stored_ids("acme")) == set(a_ids) and set(store.stored_ids("globex")) == set(b_ids)
    assert store.stored_ids("initech") == []
    store.remove("globex", b_ids)
    assert {key for key, _ in store.search("acme", a_vectors[0], 100)} == a_keys


def test_vectors_of_returns_the_stored_vectors_of_the_ids_held(open_store: Opener) -> None:
    store = open_store()
    vectors, ids = _vectors(5, 7), _ids(6, "a")
    store.add("acme", "doc", ids[:5], vectors)
    found = store.vectors_of("acme", [ids[4], ids[5], ids[1]])
    assert set(found) == {ids[4], ids[1]}  # ids[5] has no vector
    assert all(v.dtype == np.float32 for v in found.values())
    assert np.array_equal(found[ids[4]], vectors[4]) and np.array_equal(found[ids[1]], vectors[1])
    assert store.vectors_of("acme", []) == {}


def test_stored_ids_per_document(open_store: Opener) -> None:
    store = open_store()
    vectors, ids = _vectors(6, 8), _ids(6, "a")
    store.add("acme", "doc-1", ids[:2], vectors[:2])
    store.add("acme", "doc-2", ids[2:], vectors[2:])
    assert sorted(store.stored_ids("acme", "doc-1")) == ids[:2]
    assert sorted(store.stored_ids("acme", "doc-2")) == ids[2:]
    assert sorted(store.stored_ids("acme")) == ids
    assert store.stored_ids("acme", "doc-3") == []
    store.remove("acme", ids[2:4])
    assert sorted(store.stored_ids("acme", "doc-2")) == ids[4:]


def test_rebuild_drops_vectors_without_a_chunk_row(open_store: Opener) -> None:
    store = open_store()
    vectors, ids = _vectors(5, 9), _ids(5, "a")
    store.add("acme", "doc", ids[:3], vectors[:3])
    store.add("globex", "doc", ids[3:], vectors[3:])  # (ids of two tenants here only to count both)
    reopened = open_store()  # a restart after a crash between the vector write and the chunk rows
    assert reopened.rebuild({ids[0], ids[1], ids[3]}) == (3, 2)
    assert sorted(reopened.stored_ids("acme")) == ids[:2] and reopened.stored_ids("globex") == [ids[3]]
    assert {key for key, _ in reopened.search("acme", vectors[2], 10)} == {vector_key(c) for c in ids[:2]}


def test_reset_drops_everything_and_only_mark_complete_makes_it_whole_again(open_store: Opener) -> None:
    store = open_store()
    vectors, ids = _vectors(4, 10), _ids(4, "a")
    store.add("acme", "doc", ids[:2], vectors[:2])
    store.add("globex", "doc", ids[2:], vectors[2:])
    store.reset()
    assert store.stored_ids("acme") == [] and store.stored_ids("globex") == []
    assert store.search("acme", vectors[0], 10) == [] and store.vectors_of("acme", ids) == {}
    with pytest.raises(EmbedderMismatchError, match="re-index in progress"):
        open_store()  # a re-index cut short is never taken for a finished one
    store.add("acme", "doc", ids[:1], vectors[:1])
    store.mark_complete()
    store.flush()
    reopened = open_store()
    assert reopened.stored_ids("acme") == ids[:1]
    assert reopened.collection == "test-model-16d"


def test_another_embedder_is_refused_and_nothing_is_mixed(open_store: Opener) -> None:
    store = open_store()
    store.add("acme", "doc", _ids(1, "a"), _vectors(1, 11))
    with pytest.raises(EmbedderMismatchError, match="test-model@1/fp32"):
        open_store(identity="test-model@1/int8")
    assert open_store(identity="test-model@1/int8", check_identity=False).stored_ids("acme") == _ids(1, "a")


def test_an_unreachable_chroma_server_fails_the_start_naming_its_url(tmp_path) -> None:
    from services.launcher.probes import free_port
    from services.rag.runtime import RagRuntime
    from services.storage.settings import StorageSettings

    from .fakes import HashEmbedder

    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    settings = RagSettings(vector_backend="chroma", chroma_url=url)
    with pytest.raises(ChromaUnavailableError, match=f"Chroma server at {url} is unreachable"):
        RagRuntime.open(tmp_path, settings, 1024, HashEmbedder(), storage=StorageSettings(store_backend="embedded"))


def test_chroma_vectors_are_refused_with_the_postgresql_backend(tmp_path) -> None:
    from services.rag.runtime import RagRuntime
    from services.storage.settings import StorageSettings

    from .fakes import HashEmbedder

    storage = StorageSettings(store_backend="postgres", postgres_dsn="postgresql://nobody@127.0.0.1:1/none")
    with pytest.raises(ValueError, match="VECTOR_BACKEND=chroma needs DOCUTHINKER_STORE_BACKEND=embedded"):
        RagRuntime.open(tmp_path, RagSettings(vector_backend="chroma"), 1024, HashEmbedder(), storage=storage)


def test_the_backend_settings_are_read_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("DOCUTHINKER_RAG_VECTOR_BACKEND", "chroma")
    monkeypatch.setenv("DOCUTHINKER_RAG_CHROMA_URL", "http://127.0.0.1:8123")
    settings = RagSettings()
    assert (settings.vector_backend, settings.chroma_url) == ("chroma", "http://127.0.0.1:8123")
    monkeypatch.setenv("DOCUTHINKER_RAG_VECTOR_BACKEND", "qdrant")
    with pytest.raises(ValueError, match="vector_backend"):
        RagSettings()
