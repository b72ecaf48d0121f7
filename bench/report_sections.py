"""One Markdown section per benchmark, rendered from its JSON result (``bench.report`` assembles them).

Every renderer takes the benchmark's result dict and returns Markdown lines; a missing field
renders as "n/a" rather than failing, since sub-benchmarks evolve independently.
"""

from __future__ import annotations

from collections.abc import Sequence


def fmt(value, digits: int = 2, suffix: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return f"{value:,.{digits}f}{suffix}"
    return str(value)


def pct(value) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def ratio(a, b) -> float | None:
    return a / b if a is not None and b else None


def table(headers: Sequence[str], rows: Sequence[Sequence]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out + [""]


def band(spread: dict | None, digits: int = 1) -> str:
    """``median [min-max]`` of a spread dict (bench.stats.spread)."""
    if not spread:
        return "n/a"
    if spread.get("n", 0) < 2:
        return fmt(spread.get("median"), digits)
    return f"{fmt(spread['median'], digits)} [{fmt(spread['min'], digits)}-{fmt(spread['max'], digits)}]"


# -- ingestion ---------------------------------------------------------------------------
def ingest(result: dict) -> list[str]:
    rows, stages = [], []
    for name, c in result.get("corpora", {}).items():
        e2e = c.get("end_to_end", {})
        rows.append([name, e2e.get("chunks"), fmt(c.get("raw_encode_before", {}).get("chunks_per_s")),
                     fmt(c.get("raw_encode_after", {}).get("chunks_per_s")), fmt(e2e.get("chunks_per_s")),
                     pct(c.get("ratio_end_to_end_over_raw")), pct(c.get("share_of_time_outside_embedding")),
                     fmt(e2e.get("rag_peak_rss_mb"), 0, " MB")])
        total = sum(e2e.get("stage_ms_total", {}).values()) or None
        for stage, ms in e2e.get("stage_ms_total", {}).items():
            stages.append([name, stage.removesuffix("_ms"), fmt(ms, 0), pct(ratio(ms, total))])
    lines = ["End-to-end upload through Envoy (SSE) against `Embedder.encode` of exactly the same chunks, "
             "same batch size and device, timed just before and just after the upload.", ""]
    lines += table(["corpus", "chunks", "raw encode before (chunks/s)", "raw encode after (chunks/s)",
                    "end to end (chunks/s)", "end to end / raw", "time outside embedding", "rag peak RSS"], rows)
    lines += ["Where the end-to-end time went (rag service log, summed over documents):", ""]
    return lines + table(["corpus", "stage", "ms", "share"], stages)


# -- serving -----------------------------------------------------------------------------
def serving(result: dict) -> list[str]:
    lines = [f"Corpora: {', '.join(f'{int(k):,}' for k in result.get('corpora', {}))} chunks (synthetic: real "
             "SciFact chunks recombined, vectors mixed from real MiniLM vectors; see bench/synthetic_corpus.py). "
             f"Answer engine: {result.get('answer_engine')}. Rounds: {result.get('plan', {}).get('rounds')} "
             "(latency = median over rounds of each round's percentile, [min-max] over rounds).", ""]
    for size, by_op in result.get("measurements", {}).items():
        for op, m in by_op.items():
            lines += [f"#### {op.capitalize()} at {int(size):,} chunks ({m.get('distinct_queries')} distinct queries)",
                      ""]
            rows = []
            for way, w in m.get("ways", {}).items():
                for c, lv in w.get("by_concurrency", {}).items():
                    rows.append([way, c, band(lv.get("p50_ms_spread")), band(lv.get("p95_ms_spread")),
                                 fmt(lv.get("p99_ms"), 1), band(lv.get("qps_spread")), lv.get("requests"),
                                 lv.get("errors")])
            lines += table(["way", "concurrency", "p50 ms", "p95 ms", "p99 ms", "QPS", "requests", "errors"], rows)
            lines += _overhead_rows(m.get("overhead", {}))
            sat = [[way, fmt(w.get("peak_qps")), band(w.get("peak_qps_spread")), w.get("knee_concurrency")]
                   for way, w in m.get("ways", {}).items()]
            lines += ["Throughput until saturation (concurrency raised until QPS grew < 10 %):", ""]
            lines += table(["way", "peak QPS (median)", "peak QPS [min-max]", "knee concurrency"], sat)
            if "cold_c1_ms" in m:
                lines += ["Cold answers (first sight of the question, concurrency 1):", ""]
                lines += table(["way", "p50 ms", "p95 ms", "n"],
                               [[w, fmt(s.get("p50"), 1), fmt(s.get("p95"), 1), s.get("n")]
                                for w, s in m["cold_c1_ms"].items()])
            agree = m.get("agreement", {})
            lines += [f"Same ranked chunk ids from all three ways: {pct(agree.get('identical_share'))} of "
                      f"{agree.get('queries')} queries.", ""]
    mem = result.get("peak_rss_mb", {})
    lines += ["Peak resident memory (kernel high-water mark) after all corpora were served:", ""]
    lines += table(["process", "peak RSS MB"], [[k, fmt(v, 0)] for k, v in mem.items()])
    build = [[f"{int(k):,}", v.get("documents"), fmt(v.get("store_seconds"), 1), fmt(v.get("bm25_seconds"), 1)]
             for k, v in result.get("corpora", {}).items()]
    lines += ["Corpus build through the store API (not a serving figure; Chroma dominates):", ""]
    return lines + table(["chunks", "documents", "store s", "BM25 build s"], build)


def _overhead_rows(overhead: dict) -> list[str]:
    rows = []
    for pair, levels in overhead.items():
        for c, o in levels.items():
            rows.append([pair.replace("_vs_", " vs "), c, fmt(o.get("p50_diff_ms"), 2), fmt(o.get("p50_ratio"), 3),
                         fmt(o.get("p95_diff_ms"), 2), fmt(o.get("p95_ratio"), 3)])
    if not rows:
        return []
    return ["Overhead (paired per round, median over rounds):", ""] + table(
        ["comparison", "concurrency", "p50 diff ms", "p50 ratio", "p95 diff ms", "p95 ratio"], rows)


# -- quality -----------------------------------------------------------------------------
def quality(result: dict) -> list[str]:
    s = result.get("scifact", {})
    methods = s.get("methods", {})
    bm25 = methods.get("bm25", {}).get("ndcg@10")
    lines = [f"SciFact: {s.get('queries')} train queries over {s.get('documents')} abstracts "
             f"({s.get('chunks')} chunks); default fusion {s.get('default_fusion')}.", ""]
    lines += table(["method", "nDCG@10", "vs BM25", "Recall@100", "ms/query"],
                   [[m, fmt(v.get("ndcg@10"), 4), fmt(ratio(v.get("ndcg@10"), bm25), 3), fmt(v.get("recall@100"), 4),
                     fmt(v.get("ms_per_query"), 1)] for m, v in methods.items()])
    q = result.get("squad", {})
    keys = ("evidence@5", "exact_match", "f1", "exact_match_answered", "f1_answered", "answer_rate_answerable",
            "abstention_rate_unanswerable", "citation_precision")
    lines += [f"SQuAD 2.0: {q.get('questions')} questions ({q.get('answerable')} answerable, "
              f"{q.get('unanswerable')} not) over {q.get('articles')} articles.", ""]
    return lines + table(["metric", "value"], [[k, fmt(q.get(k), 4)] for k in keys])


# -- seed baseline -----------------------------------------------------------------------
def seed_baseline(result: dict) -> list[str]:
    t, q = result.get("throughput", {}), result.get("quality", {})
    dt_, sd = t.get("docuthinker", {}), t.get("seed", {})
    lines = [f"Throughput: {t.get('documents')} SciFact abstracts ingested one by one, {t.get('repeats')} rounds "
             "alternating which side goes first (median [min-max] over rounds).", ""]
    lines += table(["", "DocuThinker (production pipeline, hybrid index)", "seed (LangChain 900/120 + Chroma)",
                    "DocuThinker / seed (paired)"],
                   [["docs/s", band(dt_.get("docs_per_s"), 3), band(sd.get("docs_per_s"), 3),
                     band(t.get("ratio_docs_per_s"), 3)],
                    ["chunks/s", band(dt_.get("chunks_per_s"), 2), band(sd.get("chunks_per_s"), 2),
                     band(t.get("ratio_chunks_per_s"), 3)],
                    ["chunks made", dt_.get("chunks"), sd.get("chunks"), ""]])
    d, s = q.get("docuthinker", {}), q.get("seed", {})
    lines += [f"Retrieval quality: {q.get('queries')} SciFact train queries over {q.get('documents')} abstracts.", ""]
    return lines + table(["", "DocuThinker", "seed", "difference", "ratio"],
                         [["nDCG@10", fmt(d.get("ndcg@10"), 4), fmt(s.get("ndcg@10"), 4),
                           fmt(q.get("ndcg@10_difference"), 4), fmt(q.get("ndcg@10_ratio"), 3)],
                          ["retrieval", f"{d.get('fusion')} fusion (BM25 + dense)", s.get("retrieval"), "", ""],
                          ["chunks indexed", d.get("chunks"), s.get("chunks"), "", ""],
                          ["ms/query", fmt(d.get("ms_per_query"), 1), fmt(s.get("ms_per_query"), 1), "", ""],
                          ["queries better / worse", q.get("queries_better"), q.get("queries_worse"), "", ""]])


# -- graph, nlp, local LLM ---------------------------------------------------------------
def graph(result: dict) -> list[str]:
    rows = result.get("results", [])
    base = rows[0] if rows else {}
    lines = [f"Backends return identical related lists: {fmt(result.get('backends_agree'))}.", ""]
    return lines + table(
        ["backend", "fact upserts", "upserts/s", "vs first", "2-hop p50 ms", "2-hop p95 ms", "p50 vs first"],
        [[r.get("backend"), r.get("fact_upserts"), fmt(r.get("upserts_per_second"), 0),
          fmt(ratio(r.get("upserts_per_second"), base.get("upserts_per_second")), 3),
          fmt(r.get("related_2hop_ms", {}).get("p50"), 2), fmt(r.get("related_2hop_ms", {}).get("p95"), 2),
          fmt(ratio(r.get("related_2hop_ms", {}).get("p50"), base.get("related_2hop_ms", {}).get("p50")), 3)]
         for r in rows])


def graph_sync(result: dict) -> list[str]:
    return table(["document", "characters", "topics", "entities", "NLP ms", "upsert ms", "NLP share"],
                 [[d.get("document"), d.get("characters"), d.get("topics"), d.get("entities"), fmt(d.get("nlp_ms"), 0),
                   fmt(d.get("upsert_ms"), 0), pct(ratio(d.get("nlp_ms"), d.get("total_ms")))]
                  for d in result.get("documents", [])])


def nlp(result: dict) -> list[str]:
    rows = result.get("results", [])
    fastest = max((r.get("documents_per_second") or 0 for r in rows), default=0)
    lines = [f"{result.get('corpus', {}).get('documents')} documents, {result.get('corpus', {}).get('characters')} "
             f"characters; LLM: {fmt(result.get('llm'))}.", ""]
    return lines + table(["operation", "docs/s", "vs fastest", "p50 ms", "max ms"],
                         [[r.get("operation"), fmt(r.get("documents_per_second"), 3),
                           fmt(ratio(r.get("documents_per_second"), fastest), 3),
                           fmt(r.get("latency_ms", {}).get("p50"), 1), fmt(r.get("latency_ms", {}).get("max"), 1)]
                          for r in rows])


def ocr(result: dict) -> list[str]:
    lines = [f"{result.get('pages')} pages of prose, about {fmt(result.get('words_per_page'), 0)} words each, "
             f"at {result.get('dpi')} dpi ({result.get('languages')}); fixture scan "
             f"{result.get('fixture_scan', {}).get('file')}: {fmt(result.get('fixture_scan', {}).get('seconds'), 2)} s.",
             ""]
    rows = [["clean scan", fmt(result.get("scan_ms_per_page", {}).get("p50"), 0),
             fmt(result.get("word_accuracy", {}).get("mean"), 4), fmt(result.get("word_accuracy", {}).get("min"), 4)],
            ["degraded scan", fmt(result.get("degraded_scan_ms_per_page", {}).get("p50"), 0),
             fmt(result.get("degraded_word_accuracy", {}).get("mean"), 4),
             fmt(result.get("degraded_word_accuracy", {}).get("min"), 4)],
            ["text layer", fmt(result.get("text_layer_ms_per_page", {}).get("p50"), 2), "1", "1"]]
    workers = result.get("document_by_workers", {})
    return lines + table(["page as", "p50 ms/page", "word accuracy", "worst page"], rows) + [
        "", f"A clean scan costs {fmt(result.get('scan_vs_text_layer_time'), 0)}x the time of its text layer. "
        f"One {workers.get('pages')}-page scan: {fmt(workers.get('pages_per_second', {}).get('1'), 2)} pages/s with one "
        f"OCR worker, {fmt(workers.get('pages_per_second', {}).get('2'), 2)} with two "
        f"(x{fmt(workers.get('speedup_2_vs_1'), 2)})."]


def local_llm(result: dict) -> list[str]:
    rows = result.get("results", [])
    one = next((r for r in rows if r.get("threads") == 1), rows[0] if rows else {})
    lines = [f"{result.get('model')} ({result.get('weights')}), {result.get('tokens_per_run')} tokens per run.", ""]
    return lines + table(["threads", "load s", "decode tok/s", "end-to-end tok/s", "decode vs 1 thread"],
                         [[r.get("threads"), fmt(r.get("load_s"), 2), fmt(r.get("decode_tokens_per_s"), 1),
                           fmt(r.get("end_to_end_tokens_per_s"), 1),
                           fmt(ratio(r.get("decode_tokens_per_s"), one.get("decode_tokens_per_s")), 2)]
                          for r in rows])


RENDERERS = {"ingest": ingest, "serving": serving, "quality": quality, "seed_baseline": seed_baseline,
             "graph": graph, "graph_sync": graph_sync, "nlp": nlp, "ocr": ocr, "local_llm": local_llm}
