"""The benchmarks ``bench.run`` runs, in order, with their quick and full arguments and time limits.

Order matters a little: quality runs before the seed baseline, whose quick sample is a subset
of the quality benchmark's, so the shared embedding cache (data/bench-cache) is warm for it.

Quick sizes aim at a whole run under five minutes on an idle 2-core machine once the
embedding caches are warm; they are smoke-sized figures, the full run has the real sizes.
``quick_overrides`` shrink samples that a benchmark keeps as module constants (set in the
child process before it runs; a missing attribute fails that benchmark loudly).
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "docs"
QUICK_NLP_DOCS = ("book-war-and-peace-1p.txt", "ideas-page.html")
QUICK_SCIFACT_QUERIES = 60
QUICK_SCIFACT_DOCS = 400
"""The quick SciFact sample of both the quality benchmark and the seed baseline (same seed, same
documents), so the second finds the first's vectors in the embedding cache."""
QUICK_SQUAD_QUESTIONS = 100

Args = Callable[[pathlib.Path], list[str]]
"""Builds a benchmark's argv; gets a scratch directory that lives as long as the run."""


@dataclass(frozen=True)
class Benchmark:
    name: str
    module: str
    what: str
    quick_args: Args
    full_args: Args
    quick_timeout_s: int
    full_timeout_s: int
    quick_overrides: Mapping[str, object] = field(default_factory=dict)

    def args(self, quick: bool, scratch: pathlib.Path) -> list[str]:
        return (self.quick_args if quick else self.full_args)(scratch)

    def timeout_s(self, quick: bool) -> int:
        return self.quick_timeout_s if quick else self.full_timeout_s

    def overrides(self, quick: bool) -> Mapping[str, object]:
        return self.quick_overrides if quick else {}


def _fixed(*argv: str) -> Args:
    return lambda scratch: list(argv)


def _quick_nlp_docs(scratch: pathlib.Path) -> list[str]:
    docs = scratch / "nlp-docs"
    docs.mkdir(parents=True, exist_ok=True)
    for name in QUICK_NLP_DOCS:
        link = docs / name
        if not link.exists():
            link.symlink_to(FIXTURES / name)
    return ["--docs", str(docs)]


SUITE: tuple[Benchmark, ...] = (
    Benchmark("ingest", "bench.ingest_bench",
              "ingestion end to end through Envoy vs raw MiniLM encode of the same chunks",
              _fixed("--docs", "30", "--files", "3", "--skip-fixtures"), _fixed(), 600, 7200),
    Benchmark("serving", "bench.serving_bench",
              "Search/Query latency and throughput in process, direct gRPC and REST through Envoy",
              _fixed("--quick"), _fixed(), 900, 14400),
    Benchmark("quality", "bench.quality_bench",
              "SciFact nDCG@10/Recall@100 per fusion; SQuAD evidence@5, EM/F1, abstention, citations",
              _fixed("--quick"), _fixed(), 900, 14400,
              quick_overrides={"bench.scifact.QUICK_QUERIES": QUICK_SCIFACT_QUERIES,
                               "bench.scifact.QUICK_DOCS": QUICK_SCIFACT_DOCS,
                               "bench.squad.QUICK_QUESTIONS": QUICK_SQUAD_QUESTIONS}),
    Benchmark("seed_baseline", "bench.seed_baseline",
              "the seeds' LangChain + Chroma pipeline vs DocuThinker's default, same SciFact data",
              _fixed("--quick"), _fixed(), 900, 14400),
    Benchmark("graph", "bench.graph_bench",
              "knowledge-graph upserts and 2-hop related-document queries, LadybugDB vs ArcadeDB (Bolt)",
              _fixed("--documents", "200", "--queries", "100"), _fixed(), 300, 1800),
    Benchmark("graph_sync", "bench.graph_sync_bench",
              "what syncing a document to the graph costs (NLP extraction + graph upsert)",
              _fixed("handbook-1p.docx", "--repeat", "1"), _fixed(), 300, 1800),
    Benchmark("nlp", "bench.nlp_bench", "NLP operations, documents per second",
              _quick_nlp_docs, _fixed(), 300, 3600),
    Benchmark("ocr", "bench.ocr_bench",
              "OCR of clean and degraded scans vs the same page as a PDF text layer; word accuracy",
              _fixed("--pages", "3"), _fixed(), 300, 1800),
    Benchmark("local_llm", "bench.local_llm_bench", "local SmolLM2 load time and tokens/s by thread count",
              _fixed("--threads", "1,2", "--runs", "1", "--loads", "1", "--tokens", "24"), _fixed(), 300, 1800),
)


def by_name() -> dict[str, Benchmark]:
    return {b.name: b for b in SUITE}
