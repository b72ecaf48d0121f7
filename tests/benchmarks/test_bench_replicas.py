"""The replica benchmark's pure parts: distinct documents (no upload is a duplicate) and the N-node estimate."""

from __future__ import annotations

from bench.replica_bench import corpus, estimate


def test_documents_are_distinct_and_deterministic():
    documents = corpus(docs=12, paragraphs=3, seed=1)
    assert len({data for _, data in documents}) == 12 and len({name for name, _ in documents}) == 12
    assert corpus(docs=12, paragraphs=3, seed=1) == documents
    assert not {data for _, data in documents} & {data for _, data in corpus(docs=12, paragraphs=3, seed=2)}


def test_estimate_scales_with_nodes_until_the_database_limit():
    one = {"chunks": 1000, "chunks_per_s": 10.0, "rag_cpu_s": {"rag": 20.0}}
    two = {"chunks": 1000, "chunks_per_s": 11.0, "rag_cpu_s": {"rag": 11.0, "rag-2": 10.0}}
    result = estimate(one, two, cores_here=2)
    per_node = 2 / (20.0 / 1000)  # 100 chunks/s: a node's cores over one replica's CPU per chunk
    assert result["chunks_per_s"]["1"] == per_node and result["chunks_per_s"]["4"] == 4 * per_node
    assert result["chunks_per_s"]["32"] == result["assumptions"]["postgres_chunk_writes_per_s (assumed)"]
    assert result["gain_here_two_vs_one"] == 1.1
