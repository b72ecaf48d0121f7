"""The seed baseline pipeline: LangChain splitting at 900/120, Chroma, dense top-k."""

from __future__ import annotations

import hashlib
import random

import numpy as np

from bench.seed_baseline import QUICK, quality_sample
from bench.seed_pipeline import CHUNK_OVERLAP, CHUNK_SIZE, SeedPipeline


def bag_of_words(texts: list[str]) -> np.ndarray:
    """A deterministic stand-in for MiniLM: hashed word counts, L2-normalised."""
    out = np.zeros((len(texts), 384), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in text.lower().split():
            out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 384] += 1
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def long_text(topic: str, words: int = 400) -> str:
    rng = random.Random(topic)
    return " ".join(f"{topic}{rng.randint(0, 50)}" if i % 3 else topic for i in range(words))


def test_split_follows_the_seed_settings(tmp_path):
    seed = SeedPipeline(tmp_path, bag_of_words)
    text = long_text("alpha")
    pieces = seed.split(text)
    assert (CHUNK_SIZE, CHUNK_OVERLAP) == (900, 120)
    assert len(pieces) >= 3 and all(len(p) <= CHUNK_SIZE for p in pieces)
    # Consecutive chunks share their boundary text (the overlap), as LangChain cuts them.
    assert pieces[0][-60:].split()[-1] in pieces[1][:CHUNK_OVERLAP + 20]


def test_dense_search_ranks_documents_by_their_best_chunk(tmp_path):
    seed = SeedPipeline(tmp_path, bag_of_words)
    docs = {"a": long_text("kinase"), "b": long_text("receptor"), "c": long_text("neuron", 60)}
    chunks = {key: seed.ingest(key, text) for key, text in docs.items()}
    assert chunks["c"] == 1 and chunks["a"] > 1 and seed.chunks == sum(chunks.values())
    query = bag_of_words(["receptor receptor7 receptor12"])[0]
    # The top 2k chunks may all be b's: a document appears once, at its best chunk.
    assert seed.ranked_documents(query, 1) == ["b"]
    ranked = seed.ranked_documents(query, 10)
    assert ranked[0] == "b" and sorted(ranked) == ["a", "b", "c"]
    assert len(seed.search(query, 2)) == 2


def test_quick_quality_sample_is_the_quality_benchmarks_sample():
    # bench.scifact.sample with the same sizes must give the same documents (shared vectors).
    from bench import scifact

    rng = random.Random(1)
    corpus = {f"d{i}": f"text {i}" for i in range(500)}
    queries = {f"q{i}": f"question {i}" for i in range(120)}
    qrels = {q: {f"d{rng.randrange(500)}": 1} for q in queries}
    ours = quality_sample(corpus, queries, qrels, QUICK)
    theirs = scifact.sample(corpus, queries, qrels, quick=True, queries_wanted=QUICK.quality_queries,
                            docs_wanted=QUICK.quality_docs)
    assert ours == theirs and len(ours[1]) == QUICK.quality_queries and len(ours[0]) == QUICK.quality_docs
