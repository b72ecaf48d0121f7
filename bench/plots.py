"""PNG plots of a ``bench.run`` (matplotlib, Agg backend: no display needed).

Each plot is drawn from the run's JSON only; a plot that cannot be drawn (a benchmark failed,
a field is missing) is skipped and its error listed in the report, never fatal.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

WAY_STYLE = {"inprocess": ("tab:green", "in process"), "grpc": ("tab:blue", "direct gRPC"),
             "rest": ("tab:red", "REST via Envoy")}


def _levels(way: dict) -> tuple[list[int], dict[str, list[float]]]:
    items = sorted(((int(c), lv) for c, lv in way.get("by_concurrency", {}).items()), key=lambda x: x[0])
    xs = [c for c, _ in items]
    return xs, {key: [lv.get(key) for _, lv in items] for key in ("p50_ms", "p95_ms", "qps")}


def serving_latency(result: dict, operation: str, path: pathlib.Path) -> None:
    sizes = list(result["measurements"])
    fig, axes = plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 4), squeeze=False)
    for ax, size in zip(axes[0], sizes, strict=True):
        for way, data in result["measurements"][size][operation]["ways"].items():
            color, label = WAY_STYLE.get(way, ("gray", way))
            xs, ys = _levels(data)
            ax.plot(xs, ys["p50_ms"], "o-", color=color, label=f"{label} p50")
            ax.plot(xs, ys["p95_ms"], "s--", color=color, alpha=0.6, label=f"{label} p95")
        ax.set(xscale="log", yscale="log", xlabel="concurrent clients", ylabel="latency (ms)",
               title=f"{operation.capitalize()}, {int(size):,} chunks")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    _save(fig, path)


def serving_throughput(result: dict, path: pathlib.Path) -> None:
    sizes = list(result["measurements"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, operation in zip(axes, ("search", "query"), strict=True):
        for size, marker in zip(sizes, "os^D", strict=False):
            for way, data in result["measurements"][size][operation]["ways"].items():
                color, label = WAY_STYLE.get(way, ("gray", way))
                xs, ys = _levels(data)
                ax.plot(xs, ys["qps"], marker=marker, color=color, label=f"{label}, {int(size):,}")
        ax.set(xscale="log", xlabel="concurrent clients", ylabel="requests/s", title=f"{operation.capitalize()} QPS")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6)
    _save(fig, path)


def serving_scaling(result: dict, path: pathlib.Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 4))
    sizes = sorted(result["measurements"], key=int)
    for way in WAY_STYLE:
        color, label = WAY_STYLE[way]
        for key, style in (("p50_ms", "o-"), ("p95_ms", "s--")):
            ys = [_at_c1(result, s, way, key) for s in sizes]
            ax.plot([int(s) for s in sizes], ys, style, color=color, label=f"{label} {key[:3]}")
    ax.axhline(50, color="black", lw=0.8, ls=":", label="goal: in-process p95 50 ms at 100k")
    ax.set(xscale="log", xlabel="chunks in the corpus", ylabel="Search latency at c=1 (ms)",
           title="How Search cost grows with corpus size")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    _save(fig, path)


def _at_c1(result: dict, size: str, way: str, key: str) -> float | None:
    levels = result["measurements"][size]["search"]["ways"][way]["by_concurrency"]
    return (levels.get("1") or levels.get(1) or {}).get(key)


def ingest(result: dict, path: pathlib.Path) -> None:
    corpora = result["corpora"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    names = list(corpora)
    raw = [c["raw_chunks_per_s_mean"] for c in corpora.values()]
    e2e = [c["end_to_end"]["chunks_per_s"] for c in corpora.values()]
    x = range(len(names))
    left.bar([i - 0.2 for i in x], raw, 0.4, label="raw encode (physical limit)", color="tab:gray")
    left.bar([i + 0.2 for i in x], e2e, 0.4, label="end to end via Envoy", color="tab:blue")
    left.set(xticks=list(x), xticklabels=names, ylabel="chunks/s", title="Ingestion vs raw MiniLM encode")
    left.legend(fontsize=8)
    bottom = [0.0] * len(names)
    stages = sorted({k for c in corpora.values() for k in c["end_to_end"]["stage_ms_total"]})
    for stage in stages:
        values = [c["end_to_end"]["stage_ms_total"].get(stage, 0.0) / 1000 for c in corpora.values()]
        right.bar(names, values, bottom=bottom, label=stage.removesuffix("_ms"))
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    right.set(ylabel="seconds", title="Per-stage time (rag log)")
    right.legend(fontsize=8)
    _save(fig, path)


def seed_baseline(result: dict, path: pathlib.Path) -> None:
    t, q = result["throughput"], result["quality"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    sides = ("docuthinker", "seed")
    colors = ("tab:blue", "tab:orange")
    medians = [t[s]["docs_per_s"]["median"] for s in sides]
    errors = [[m - t[s]["docs_per_s"]["min"] for m, s in zip(medians, sides, strict=True)],
              [t[s]["docs_per_s"]["max"] - m for m, s in zip(medians, sides, strict=True)]]
    left.bar(sides, medians, yerr=errors, color=colors, capsize=4)
    left.set(ylabel="documents/s", title=f"Ingestion (x{t['ratio_docs_per_s']['median']:.2f})")
    right.bar(sides, [q[s]["ndcg@10"] for s in sides], color=colors)
    right.set(ylim=(0, 1), ylabel="nDCG@10", title=f"SciFact train, {q['queries']} queries")
    _save(fig, path)


def quality(result: dict, path: pathlib.Path) -> None:
    methods = result["scifact"]["methods"]
    squad = result["squad"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    names = list(methods)
    left.bar([i - 0.2 for i in range(len(names))], [methods[m]["ndcg@10"] for m in names], 0.4, label="nDCG@10")
    left.bar([i + 0.2 for i in range(len(names))], [methods[m]["recall@100"] for m in names], 0.4,
             label="Recall@100")
    left.set(xticks=range(len(names)), xticklabels=names, ylim=(0, 1), title="SciFact retrieval by fusion")
    left.legend(fontsize=8)
    keys = ["evidence@5", "exact_match", "f1", "answer_rate_answerable", "abstention_rate_unanswerable",
            "citation_precision"]
    right.barh(keys, [squad.get(k, 0) for k in keys], color="tab:purple")
    right.set(xlim=(0, 1), title="SQuAD 2.0 answers")
    _save(fig, path)


def graph(result: dict, path: pathlib.Path) -> None:
    rows = result["results"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    names = [r["backend"].split(" ")[0] for r in rows]
    left.bar(names, [r["upserts_per_second"] for r in rows], color="tab:green")
    left.set(ylabel="fact upserts/s", title="Graph upserts")
    right.bar([i - 0.2 for i in range(len(rows))], [r["related_2hop_ms"]["p50"] for r in rows], 0.4, label="p50")
    right.bar([i + 0.2 for i in range(len(rows))], [r["related_2hop_ms"]["p95"] for r in rows], 0.4, label="p95")
    right.set(xticks=range(len(rows)), xticklabels=names, ylabel="ms", title="2-hop related documents")
    right.legend(fontsize=8)
    _save(fig, path)


def _save(fig, path: pathlib.Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


PLOTS: dict[str, list[tuple[str, Callable[[dict, pathlib.Path], None]]]] = {
    "ingest": [("ingest", ingest)],
    "serving": [("serving-search", lambda r, p: serving_latency(r, "search", p)),
                ("serving-query", lambda r, p: serving_latency(r, "query", p)),
                ("serving-throughput", serving_throughput), ("serving-scaling", serving_scaling)],
    "quality": [("quality", quality)],
    "seed_baseline": [("seed-baseline", seed_baseline)],
    "graph": [("graph", graph)],
}


def render_all(run: dict, directory: pathlib.Path, base: str) -> tuple[dict[str, list[str]], list[str]]:
    """Draws every plot it can; returns {benchmark: [file names]} and the errors of the others."""
    made: dict[str, list[str]] = {}
    errors: list[str] = []
    for name, plots in PLOTS.items():
        entry = run.get("benchmarks", {}).get(name)
        if not entry or entry.get("status") != "ok":
            continue
        for suffix, draw in plots:
            target = directory / f"{base}-{suffix}.png"
            try:
                draw(entry["result"], target)
            except Exception as exc:  # noqa: BLE001 - reported, the rest still get drawn
                plt.close("all")
                errors.append(f"{suffix}: {type(exc).__name__}: {exc}")
                continue
            made.setdefault(name, []).append(target.name)
    return made, errors
