"""Large tenants on HNSW: recall against exact search, restarts without a rebuild, crash safety,
and vector stores that refuse another embedder's vectors."""

from __future__ import annotations

import numpy as np
import pytest

from services.rag.documents import vector_key
from services.rag.store import VectorStore, ann
from services.rag.store.ann import ExactIndex, HnswIndex
from services.rag.store.vectors import EmbedderMismatchError

DIM = 32
THRESHOLD = 300


def _vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, DIM))
    v = centres[rng.integers(0, 20, n)] + 0.4 * rng.normal(size=(n, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def _ids(n: int, prefix: str = "c") -> list[str]:
    """Chunk ids are hex digests (``vector_key`` reads their first 15 digits)."""
    return [f"{prefix}{i:014x}{'0' * 17}" for i in range(n)]


def _store(tmp_path, **kw) -> VectorStore:
    return VectorStore(tmp_path / "chroma", "test-model", DIM, identity=kw.pop("identity", "test-model@1/fp32"),
                       hnsw_threshold=THRESHOLD, snapshot_dir=tmp_path / "ann", **kw)


def _exact_top(vectors: np.ndarray, ids: list[str], query: np.ndarray, k: int) -> set[int]:
    return {vector_key(ids[i]) for i in np.argsort(-(vectors @ query))[:k]}


def _recall(store: VectorStore, vectors: np.ndarray, ids: list[str], queries: np.ndarray) -> float:
    hits = [len({key for key, _ in store.search("t", q, 10)} & _exact_top(vectors, ids, q, 10)) for q in queries]
    return sum(hits) / (10 * len(queries))


def test_small_tenants_stay_exact_and_large_ones_move_to_hnsw_keeping_recall(tmp_path) -> None:
    store = _store(tmp_path)
    vectors, ids = _vectors(1000, 1), _ids(1000)
    store.add("t", "d", ids[:THRESHOLD - 1], vectors[:THRESHOLD - 1])
    store.add("small", "d", _ids(1, "a"), vectors[:1])
    assert store.index_kind("t") == "exact"
    for start in range(THRESHOLD - 1, 1000, 100):  # grown incrementally, one document at a time
        store.add("t", "d", ids[start : start + 100], vectors[start : start + 100])
    assert store.index_kind("t") == "hnsw" and store.faiss_count("t") == 1000
    assert store.index_kind("small") == "exact"
    assert _recall(store, vectors, ids, _vectors(50, 2)) >= 0.99
    assert (tmp_path / "ann").is_dir() and list((tmp_path / "ann").glob("*.npz"))


def test_hnsw_removals_and_replacements_are_never_returned(tmp_path) -> None:
    store = _store(tmp_path)
    vectors, ids = _vectors(600, 3), _ids(600)
    store.add("t", "d", ids, vectors)
    gone = ids[:50]
    store.remove("t", gone)
    store.add("t", "d", ids[50:60], -vectors[50:60])  # replaced: the old vectors must not answer
    for q in range(60):
        found = {key for key, _ in store.search("t", vectors[q], 10)}
        assert not found & {vector_key(c) for c in gone}
        if q >= 50:
            assert vector_key(ids[q]) not in found
    allowed = [vector_key(c) for c in ids[100:110]]
    assert {k for k, _ in store.search("t", vectors[100], 5, allowed)} <= set(allowed)
    assert store.faiss_count("t") == 550


def test_hnsw_index_survives_a_restart_without_a_rebuild(tmp_path, monkeypatch) -> None:
    vectors, ids = _vectors(800, 4), _ids(800)
    store = _store(tmp_path)
    store.add("t", "d", ids, vectors)
    store.flush()
    before = store.search("t", vectors[7], 10)

    added: list[int] = []
    real_add = HnswIndex.add
    monkeypatch.setattr(HnswIndex, "add", lambda self, k, v: (added.append(len(k)), real_add(self, k, v))[1])
    monkeypatch.setattr(ExactIndex, "add", lambda self, k, v: pytest.fail("rebuilt from Chroma"))
    reopened = _store(tmp_path)
    loaded, orphans = reopened.rebuild(set(ids))
    assert (loaded, orphans) == (800, 0) and added == []  # loaded from the snapshot, no insertion at all
    assert reopened.index_kind("t") == "hnsw"
    assert reopened.search("t", vectors[7], 10) == before


def test_a_crash_mid_snapshot_leaves_a_complete_index_after_restart(tmp_path, monkeypatch) -> None:
    vectors, ids = _vectors(900, 5), _ids(900)
    store = _store(tmp_path)
    store.add("t", "d", ids[:600], vectors[:600])  # HNSW, snapshot written
    store.add("t", "d", ids[600:], vectors[600:])  # below the snapshot interval: only in memory and Chroma

    def torn_write(*args, **kwargs):
        args[0].write(b"half a snapshot")
        raise OSError("killed mid-write")

    monkeypatch.setattr(ann.np, "savez", torn_write)
    with pytest.raises(OSError):
        store.flush()
    monkeypatch.undo()
    snapshots = list((tmp_path / "ann").glob("*.npz"))
    assert len(snapshots) == 1 and np.load(snapshots[0])["keys"].size == 600  # the old one, intact

    reopened = _store(tmp_path)
    loaded, _ = reopened.rebuild(set(ids))
    assert loaded == 900 and reopened.index_kind("t") == "hnsw"
    assert _recall(reopened, vectors, ids, vectors[::45]) >= 0.99
    assert not list((tmp_path / "ann").glob(".*.tmp"))


def test_a_torn_snapshot_file_is_rebuilt_from_the_vector_log(tmp_path) -> None:
    vectors, ids = _vectors(500, 6), _ids(500)
    store = _store(tmp_path)
    store.add("t", "d", ids, vectors)
    (snapshot,) = (tmp_path / "ann").glob("*.npz")
    snapshot.write_bytes(snapshot.read_bytes()[:1000])  # e.g. a disk that lost the tail
    reopened = _store(tmp_path)
    assert reopened.rebuild(set(ids))[0] == 500
    assert reopened.has_key("t", vector_key(ids[499]))


def test_another_embedder_is_refused_and_nothing_is_mixed(tmp_path) -> None:
    store = _store(tmp_path)
    store.add("t", "d", _ids(3), _vectors(3, 7))
    with pytest.raises(EmbedderMismatchError, match="test-model@1/fp32.*test-model@1/int8.*REINDEX"):
        _store(tmp_path, identity="test-model@1/int8")
    assert _store(tmp_path).stored_ids("t")  # the original embedder still opens its vectors


def test_a_chroma_store_of_an_older_version_is_imported_once_with_its_identity(tmp_path) -> None:
    import chromadb
    from chromadb.config import Settings

    vectors, ids = _vectors(40, 8), _ids(40)
    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False))
    collection = client.get_or_create_collection(
        "test-model-32d", embedding_function=None,
        metadata={"hnsw:space": "cosine", "model": "test-model", "dimension": DIM, "embedder": "test-model@1/int8"})
    collection.upsert(ids=ids, embeddings=vectors, metadatas=[{"tenant": "t", "document_id": "d"}] * 40)
    del collection, client

    with pytest.raises(EmbedderMismatchError):  # the identity Chroma recorded came along
        _store(tmp_path)
    store = _store(tmp_path, identity="test-model@1/int8")
    assert store.rebuild(set(ids)) == (40, 0)
    assert store.search("t", vectors[3], 1)[0][0] == vector_key(ids[3])
    assert sorted(store.stored_ids("t", "d")) == ids
    assert not (tmp_path / "chroma" / "chroma.sqlite3").exists()  # imported once, then removed
