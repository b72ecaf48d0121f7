"""The Markdown report of a ``bench.run``: headline figures, goals, environment, then each benchmark.

``headline`` pulls out the figures the project quotes (ingestion as a share of raw encode,
mesh overhead, retrieval p95 at the largest corpus, DocuThinker vs the seed baseline) and
the goals every benchmark checked; both go into the JSON as well as the report.
"""

from __future__ import annotations

from bench.report_sections import RENDERERS, fmt, pct, table

INGEST_GOAL = 0.85


def _ok(run: dict, name: str) -> dict | None:
    entry = run.get("benchmarks", {}).get(name)
    return entry.get("result") if entry and entry.get("status") == "ok" else None


def headline(run: dict) -> dict:
    out: dict = {}
    if ingest := _ok(run, "ingest"):
        out["ingestion_share_of_raw_encode"] = {
            name: c.get("ratio_end_to_end_over_raw") for name, c in ingest.get("corpora", {}).items()}
    if serving := _ok(run, "serving"):
        overhead, p95 = {}, {}
        for size, by_op in serving.get("measurements", {}).items():
            search = by_op.get("search", {})
            levels = search.get("overhead", {})
            overhead[size] = {pair: levels.get(pair, {}).get(1) or levels.get(pair, {}).get("1")
                              for pair in ("rest_vs_inprocess", "grpc_vs_inprocess", "rest_vs_grpc")}
            inproc = search.get("ways", {}).get("inprocess", {}).get("by_concurrency", {})
            level = inproc.get(1) or inproc.get("1") or {}
            p95[size] = level.get("p95_ms")
        out["search_overhead_c1"] = overhead
        out["search_inprocess_p95_ms_c1"] = p95
    if seed := _ok(run, "seed_baseline"):
        t, q = seed.get("throughput", {}), seed.get("quality", {})
        out["seed_baseline"] = {
            "docs_per_s_ratio": t.get("ratio_docs_per_s", {}).get("median"),
            "chunks_per_s_ratio": t.get("ratio_chunks_per_s", {}).get("median"),
            "ndcg@10_docuthinker": q.get("docuthinker", {}).get("ndcg@10"),
            "ndcg@10_seed": q.get("seed", {}).get("ndcg@10"),
        }
    goals: dict = {}
    for name, entry in run.get("benchmarks", {}).items():
        result = entry.get("result") or {}
        if isinstance(result.get("goals"), dict):
            goals[name] = result["goals"]
    if ingest:
        goals["ingest"] = {f"{name}: end to end >= {INGEST_GOAL:.0%} of raw encode": ratio >= INGEST_GOAL
                           for name, ratio in out["ingestion_share_of_raw_encode"].items() if ratio is not None}
    out["goals"] = goals
    return out


def _summary(run: dict) -> list[str]:
    h = run.get("headline", {})
    rows = [[f"ingestion ({name}) as share of raw encode", pct(v)]
            for name, v in h.get("ingestion_share_of_raw_encode", {}).items()]
    for size, pairs in h.get("search_overhead_c1", {}).items():
        for pair, o in pairs.items():
            if o:
                rows.append([f"Search overhead {pair.replace('_vs_', ' vs ')} at {int(size):,} chunks (c=1)",
                             f"p50 {fmt(o.get('p50_diff_ms'))} ms (x{fmt(o.get('p50_ratio'), 3)}), "
                             f"p95 {fmt(o.get('p95_diff_ms'))} ms (x{fmt(o.get('p95_ratio'), 3)})"])
    for size, p95 in h.get("search_inprocess_p95_ms_c1", {}).items():
        rows.append([f"Search p95 in process at {int(size):,} chunks (c=1)", f"{fmt(p95, 1)} ms"])
    if seed := h.get("seed_baseline"):
        rows.append(["ingest throughput DocuThinker / seed", f"docs/s x{fmt(seed.get('docs_per_s_ratio'), 3)}, "
                     f"chunks/s x{fmt(seed.get('chunks_per_s_ratio'), 3)}"])
        rows.append(["nDCG@10 DocuThinker vs seed", f"{fmt(seed.get('ndcg@10_docuthinker'), 4)} vs "
                     f"{fmt(seed.get('ndcg@10_seed'), 4)}"])
    lines = ["## Headline", ""] + table(["figure", "value"], rows)
    goal_rows = [[name, goal, "met" if ok else "**not met**"]
                 for name, goals in h.get("goals", {}).items() for goal, ok in goals.items()]
    return lines + ["## Goals", ""] + table(["benchmark", "goal", "status"], goal_rows)


def _environment(run: dict) -> list[str]:
    env = run.get("environment_at_start", {})
    gpu = env.get("gpu", {})
    rows = [["host", env.get("host")], ["CPUs (affinity)", f"{env.get('cpus')} ({env.get('cpu_affinity')})"],
            ["torch threads", env.get("torch_threads")],
            ["load average at start / end", f"{env.get('load_average')} / {run.get('load_average_at_end')}"],
            ["embedding device requested / used", f"{env.get('device_requested')} / {env.get('device_used')}"],
            ["GPU", gpu.get("name", "none") if gpu.get("cuda_available") else "none (CUDA unavailable)"],
            ["platform", env.get("platform")], ["python", env.get("python")],
            ["wall time / CPU time of the run", f"{fmt(run.get('seconds'), 0)} s / {fmt(run.get('cpu_seconds'), 0)} s"]]
    rows += [[f"`{k}`", v] for k, v in env.get("versions", {}).items()]
    return ["## Environment", "",
            "Shared machines are noisy: absolute times move with the load average; ratios of two things "
            "measured in the same run are what to compare across machines.", ""] + table(["", ""], rows)


def render(run: dict, json_name: str) -> str:
    lines = [f"# DocuThinker benchmarks: {run.get('variant')} run of {run.get('started')}", "",
             f"Raw results: [{json_name}]({json_name}). How to read this report: bench/README.md.", ""]
    if run.get("failed"):
        lines += [f"**Failed: {', '.join(run['failed'])}** (details in their sections).", ""]
    lines += _summary(run) + _environment(run)
    plots = run.get("plots", {})
    for name, entry in run.get("benchmarks", {}).items():
        lines += [f"## {name}: {entry.get('what')}", "",
                  f"Status: **{entry.get('status')}** in {fmt(entry.get('seconds'), 0)} s "
                  f"(CPU {fmt(entry.get('cpu_seconds'), 0)} s); args `{' '.join(entry.get('args', []))}`"
                  + (f"; sample overrides {entry['overrides']}" if entry.get("overrides") else "") + ".", ""]
        if entry.get("status") != "ok":
            lines += [f"Error: {entry.get('error')}. Last lines of `{entry.get('log')}`:", "", "```",
                      *entry.get("log_tail", []), "```", ""]
            continue
        try:
            lines += RENDERERS[name](entry["result"]) if name in RENDERERS else ["(no renderer)", ""]
        except Exception as exc:  # noqa: BLE001 - one odd result must not lose the whole report
            lines += [f"(could not render this section: {type(exc).__name__}: {exc}; see the JSON)", ""]
        lines += [f"![{p}]({p})" for p in plots.get(name, [])] + [""]
    if run.get("plot_errors"):
        lines += ["## Plot errors", "", *[f"- {e}" for e in run["plot_errors"]], ""]
    return "\n".join(lines)
