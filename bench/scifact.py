"""SciFact (BEIR) retrieval quality: nDCG@10 and Recall@100 per fusion method, in one run.

Each abstract is one document (title + " " + text, as BEIR indexes it), chunked and indexed
by the production code; a document's rank is that of its best chunk. Every method runs the
production ``HybridRetriever`` with the same candidate depth rule (top_k * 2 per retriever):
nDCG@10 is measured at the depth a top_k of 10 documents implies, Recall@100 at top_k 100.
"""

from __future__ import annotations

import gzip
import json
import pathlib
import random
import time
from collections.abc import Sequence

from bench.corpus import BenchCorpus, DiskCachedEncoder
from bench.metrics import mean, ndcg_at_k, recall_at_k
from bench.shared import SHARED
from services.rag.retrieval import FusionMethod, HybridRetriever, Normalisation, RetrievalConfig, ScoreFusionConfig

DATA = SHARED / "data" / "scifact"

QUICK_QUERIES = 200
QUICK_DOCS = 1200


def load(data: pathlib.Path = DATA):
    with gzip.open(data / "corpus.jsonl.gz", "rt") as fh:
        corpus = {d["_id"]: (d["title"] + " " + d["text"]).strip() for d in map(json.loads, fh)}
    queries = {q["_id"]: q["text"] for q in map(json.loads, (data / "queries.train.jsonl").open())}
    qrels: dict[str, dict[str, int]] = {}
    for line in list((data / "qrels.train.tsv").open())[1:]:
        qid, did, score = line.split("\t")
        qrels.setdefault(qid, {})[did] = int(score)
    queries = {q: t for q, t in queries.items() if q in qrels}
    return corpus, queries, qrels


def sample(corpus, queries, qrels, quick: bool, seed: int = 13, queries_wanted: int = QUICK_QUERIES,
           docs_wanted: int = QUICK_DOCS):
    """Quick runs: a seeded sample of queries, their judged documents plus random distractors."""
    if not quick:
        return corpus, queries
    rng = random.Random(seed)
    chosen = dict(rng.sample(sorted(queries.items()), min(queries_wanted, len(queries))))
    keep = {d for q in chosen for d in qrels[q] if d in corpus}
    others = sorted(set(corpus) - keep)
    keep |= set(rng.sample(others, max(0, min(len(others), docs_wanted - len(keep)))))
    return {d: corpus[d] for d in sorted(keep)}, chosen


def ranked_documents(retriever: HybridRetriever, corpus: BenchCorpus, query: str, k: int, fusion: FusionMethod) -> list[str]:
    # Ask for twice as many chunks as documents wanted: long abstracts have 2-3 chunks.
    hits = retriever.retrieve(BenchCorpus.TENANT, query, top_k=2 * k, fusion=fusion)
    docs = list(dict.fromkeys(corpus.by_document_id[h.chunk.document_id].key for h in hits))
    return docs[:k]


FUSIONS: dict[str, tuple[FusionMethod, ScoreFusionConfig | None]] = {
    "bm25": (FusionMethod.KEYWORD_ONLY, None),
    "dense": (FusionMethod.DENSE_ONLY, None),
    "rrf": (FusionMethod.RRF, None),
    "score": (FusionMethod.SCORE, None),
}


def evaluate(corpus: BenchCorpus, queries: dict[str, str], qrels, configs: dict[str, tuple[FusionMethod, ScoreFusionConfig | None]],
             encoder) -> dict[str, dict[str, float]]:
    results = {}
    for name, (fusion, score_config) in configs.items():
        config = RetrievalConfig() if score_config is None else RetrievalConfig(score_fusion=score_config)
        retriever = HybridRetriever(corpus.index, encoder, config)
        started = time.perf_counter()
        ndcg, recall = [], []
        for qid, text in queries.items():
            ndcg.append(ndcg_at_k(ranked_documents(retriever, corpus, text, 10, fusion), qrels[qid], 10))
            recall.append(recall_at_k(ranked_documents(retriever, corpus, text, 100, fusion), qrels[qid], 100))
        elapsed = time.perf_counter() - started
        results[name] = {
            "ndcg@10": round(mean(ndcg), 4),
            "recall@100": round(mean(recall), 4),
            "ms_per_query": round(1000 * elapsed / max(len(queries), 1) / 2, 2),
        }
    return results


def sweep_configs(weights: Sequence[float] = (0.3, 0.4, 0.5, 0.6, 0.7)) -> dict:
    configs = {}
    for norm in Normalisation:
        for w in weights:
            configs[f"score[{norm.value},dense={w}]"] = (FusionMethod.SCORE, ScoreFusionConfig(w, norm))
    return configs


def run(quick: bool, sweep: bool = False, sweep_weights: Sequence[float] = (0.3, 0.4, 0.5, 0.6, 0.7),
        encoder: DiskCachedEncoder | None = None) -> dict:
    corpus_all, queries_all, qrels = load()
    corpus_texts, queries = sample(corpus_all, queries_all, qrels, quick)
    encoder = encoder or DiskCachedEncoder("scifact")
    bench = BenchCorpus(encoder)
    try:
        bench.add(corpus_texts.items())
        encoder.encode(list(queries.values()))  # query vectors cached once for every method
        configs = {**FUSIONS, **(sweep_configs(sweep_weights) if sweep else {})}
        methods = evaluate(bench, queries, qrels, configs, encoder)
        encoder.save()
        default = RetrievalConfig()
        return {
            "queries": len(queries),
            "documents": len(corpus_texts),
            "chunks": bench.chunk_count,
            "index_seconds": round(bench.index_seconds, 1),
            "default_fusion": default.default_fusion.name,
            "default_score_fusion": {
                "dense_weight": default.score_fusion.dense_weight,
                "normalisation": default.score_fusion.normalisation.value,
            },
            "methods": methods,
        }
    finally:
        bench.close()
