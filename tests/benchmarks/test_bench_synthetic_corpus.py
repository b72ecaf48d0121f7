"""Synthetic serving corpora: recombined text, derived vectors, written through the production stores."""

from __future__ import annotations

import numpy as np

from bench.synthetic_corpus import CHUNKS_PER_DOCUMENT, BasePool, CorpusWriter, synthetic_chunks
from services.models.embedder import DIMENSION, MODEL_NAME
from services.rag.store import KeywordIndex, VectorStore

WORDS = ["kinase", "receptor", "mitochondria", "insulin", "tumour", "antibody", "neuron", "enzyme"]


def pool(size: int = 12) -> BasePool:
    rng = np.random.default_rng(7)
    texts = tuple(f"The {WORDS[i % 8]} study number {i} measured cells. Result {i} was significant. "
                  f"Patients {i} improved." for i in range(size))
    vectors = rng.normal(size=(size, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return BasePool(texts, vectors, filler=("Zebrafish embryos glow under light.", "Ribosomes translate RNA."))


def test_synthetic_chunks_start_with_the_pool_and_stay_distinct():
    base = pool()
    texts, vectors = synthetic_chunks(base, 200, seed=1, max_chars=120)
    assert len(texts) == 200 and vectors.shape == (200, DIMENSION)
    assert texts[:12] == list(base.texts)
    assert np.array_equal(vectors[:12], base.vectors)
    assert all(len(t) <= 120 for t in texts[12:])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert len({v.tobytes() for v in vectors}) == 200
    # A recombined chunk's vector stays close to one base vector (its main source), not random.
    nearest = (vectors[12:] @ base.vectors.T).max(axis=1)
    assert float(np.median(nearest)) > 0.8


def test_fewer_chunks_than_the_pool_takes_a_prefix():
    texts, vectors = synthetic_chunks(pool(), 5, seed=1, max_chars=900)
    assert texts == list(pool().texts[:5]) and vectors.shape == (5, DIMENSION)


def test_written_corpus_is_searchable_and_what_a_restarted_service_loads(tmp_path):
    base = pool()
    count = CHUNKS_PER_DOCUMENT + 30  # two documents
    texts, vectors = synthetic_chunks(base, count, seed=3, max_chars=900)
    writer = CorpusWriter(tmp_path)
    try:
        stats = writer.write("serving-test", texts, vectors)
        assert stats["chunks"] == count and stats["documents"] == 2
        generation, rows = writer.metadata.visible_texts("serving-test")
        assert len(rows) == count
        hits = writer.index.dense_search("serving-test", base.vectors[4], 1)
        assert [c.text for c in writer.index.get_chunks("serving-test", [hits[0][0]])] == [base.texts[4]]
        keyword = writer.index.keyword_search("serving-test", "mitochondria", 5)
        assert keyword and all("mitochondria" in c.text for c in
                               writer.index.get_chunks("serving-test", [k for k, _ in keyword]))
        assert writer.index.dense_search("someone-else", base.vectors[4], 1) == []
        # What RagRuntime.open does at service start: rebuild FAISS from Chroma, load BM25.
        reopened = VectorStore(tmp_path / "rag" / "chroma", MODEL_NAME, DIMENSION, identity=writer.vectors.identity)
        loaded, orphans = reopened.rebuild(writer.metadata.known_chunk_ids())
        assert (loaded, orphans) == (count, 0)
        keyword_index = KeywordIndex(tmp_path / "rag" / "bm25", writer.metadata)
        keyword_index.load()
        assert keyword_index.is_fresh("serving-test")
        assert generation == writer.metadata.generation("serving-test")
    finally:
        writer.close()
