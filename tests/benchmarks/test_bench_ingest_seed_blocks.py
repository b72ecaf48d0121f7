"""The ingest-seed benchmark's protocol: each block of uploads is compared with raw runs of its own chunks,
taken right before and after it, and a round's share is over the blocks' summed seconds."""

from __future__ import annotations

from bench import ingest_seed_bench as bench
from bench.ingest_bench import Upload


class FakeMesh:
    def pids(self) -> dict[str, int]:
        return {"rag": 1}


def uploads(n: int) -> list[Upload]:
    return [Upload(f"d{i}.txt", b"x", chunks=[f"d{i} chunk {c}" for c in range(1 + i % 3)]) for i in range(n)]


def test_each_block_is_timed_between_raw_runs_of_its_own_chunks(monkeypatch):
    calls: list[tuple[str, object]] = []
    raw_seconds = iter([1.0, 3.0, 2.0, 2.0])  # block 1: before, after; block 2: before, after

    def raw_limit(embedder, texts):
        calls.append(("raw", tuple(texts)))
        seconds = next(raw_seconds)
        return {"chunks": len(texts), "seconds": seconds, "chunks_per_s": len(texts) / seconds}

    def through_envoy(mesh, part, concurrency, tenant):
        calls.append(("e2e", tuple(t for u in part for t in u.chunks)))
        chunks = sum(len(u.chunks) for u in part)
        return {"documents": len(part), "chunks": chunks, "concurrency": concurrency, "seconds": 4.0,
                "docs_per_s": len(part) / 4.0, "chunks_per_s": chunks / 4.0, "rag_peak_rss_mib": 10.0 + len(calls),
                "cpu_s_by_process": {"rag": 1.5, "bench_client": 0.25}}

    monkeypatch.setattr(bench, "raw_limit", raw_limit)
    monkeypatch.setattr(bench, "through_envoy", through_envoy)
    monkeypatch.setattr(bench, "wait_idle", lambda pids: 0.0)
    docs = uploads(6)
    out = bench.measured(FakeMesh(), object(), docs, concurrency=8, rounds=1, blocks=2)

    first = tuple(t for u in docs[:3] for t in u.chunks)
    second = tuple(t for u in docs[3:] for t in u.chunks)
    assert calls == [("raw", first), ("e2e", first), ("raw", first), ("raw", second), ("e2e", second), ("raw", second)]
    chunks = len(first) + len(second)
    assert out["end_to_end"]["chunks"] == chunks and out["end_to_end"]["seconds"] == 8.0
    assert out["end_to_end"]["cpu_s_by_process"] == {"rag": 3.0, "bench_client": 0.5}
    assert out["end_to_end"]["rag_peak_rss_mib"] == max(10.0 + 2, 10.0 + 5)
    # raw: (1+3)/2 + (2+2)/2 = 4 s for all the chunks; end to end: 8 s -> half the raw speed.
    assert out["raw_chunks_per_s_mean"] == round(chunks / 4.0, 2)
    assert out["share_of_raw_limit"] == 0.5
    assert [b["end_to_end_seconds"] for b in out["blocks"]] == [4.0, 4.0]


def test_one_upload_is_one_block_and_the_median_round_is_reported(monkeypatch):
    shares = iter([2.0, 1.0, 4.0])  # e2e seconds per round; raw always 1 s

    monkeypatch.setattr(bench, "raw_limit", lambda embedder, texts: {"chunks": len(texts), "seconds": 1.0,
                                                                      "chunks_per_s": float(len(texts))})
    monkeypatch.setattr(bench, "through_envoy", lambda mesh, part, concurrency, tenant: {
        "documents": 1, "chunks": 2, "concurrency": 1, "seconds": (s := next(shares)), "docs_per_s": 1 / s,
        "chunks_per_s": 2 / s, "rag_peak_rss_mib": 1.0, "cpu_s_by_process": {"rag": 1.0}})
    monkeypatch.setattr(bench, "wait_idle", lambda pids: 0.0)
    big = [Upload("big.txt", b"x", chunks=["a", "b"])]
    out = bench.measured(FakeMesh(), object(), big, concurrency=1, rounds=3, blocks=3)
    assert [r["share_of_raw_limit"] for r in out["rounds"]] == [0.5, 1.0, 0.25]
    assert out["share_of_raw_limit"] == 0.5 and "raw_before" in out and "blocks" not in out
