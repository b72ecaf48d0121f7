"""Scoring the answer ranker through the production engine (``bench.answer_training``'s step 2 and report).

Held-out questions are answered by ``ExtractiveAnswerer(ranker=...)`` with each fold's model (whole documents at
hand for summaries and table computations) and scored by the sets' matching rule; the outcomes are summarised
overall, per set, format, kind and tag, as a risk-coverage curve, and as the Markdown report.
"""

from __future__ import annotations

import pathlib
import time
from collections.abc import Sequence

from bench.answer_data import QuestionSample
from bench.answer_fit import GRID, choose_threshold, folds_of, train
from bench.answer_samples import document_chunks
from bench.docqa_score import breakdown
from services.rag.answers.ranker import AnswerRanker


def answer_with(ranker: AnswerRanker, samples: Sequence[QuestionSample], encoder) -> list[tuple[object, float]]:
    """(scored outcome, probability of the best unit: 1 for a computed answer, 0 with no unit) per sample."""
    from bench.docqa_bench import reply_from_domain
    from bench.docqa_score import score
    from services.rag.answers.extractive import ExtractiveAnswerer

    engine = ExtractiveAnswerer(encoder, ranker=ranker, document_chunks=document_chunks)
    outcomes = []
    for s in samples:
        started = time.perf_counter()
        answer = engine.answer(s.question, s.pool)
        seconds = time.perf_counter() - started
        best = engine.rank(s.question, s.pool)
        p = 1.0 if answer.answer_type.startswith(("aggregate", "summary")) else engine.answerability(best)
        outcomes.append((score(s.item, reply_from_domain(answer, seconds)), p))
    return outcomes


def cross_validate(real: Sequence[QuestionSample], other: Sequence[QuestionSample], encoder, k: int,
                   scored_only: Sequence[QuestionSample] = ()) -> dict:
    """Out-of-fold outcomes at each fold's own threshold, and at threshold 0 (for the risk-coverage curve);
    ``scored_only`` samples are answered by the fold their document falls in, never trained on."""
    folds = folds_of([s.group for s in real], k)
    fold_of = dict(zip([s.group for s in real], folds, strict=True))
    outcomes: dict[str, object] = {}
    curve: list[tuple[float, bool, bool]] = []
    thresholds = []
    for f in range(k):
        held = [s for s, g in zip(real, folds, strict=True) if g == f]
        held_groups = {s.group for s in held}
        held = held + [s for s in scored_only if fold_of.get(s.group) == f]
        training = [s for s, g in zip(real, folds, strict=True) if g != f] + [
            s for s in other if s.group not in held_groups]
        threshold = choose_threshold(training)
        thresholds.append(threshold)
        model = train(training)
        ranker = AnswerRanker.from_model(model, threshold, f"fold-{f}")
        for s, (o, _) in zip(held, answer_with(ranker, held, encoder), strict=True):
            outcomes[s.id + "@" + s.source] = (s, o, f)
        always = AnswerRanker.from_model(model, 0.0, f"fold-{f}")
        headline = [s for s in held if s.source in HEADLINE]
        curve += [(p, bool(o.correct), s.answerable)
                  for s, (o, p) in zip(headline, answer_with(always, headline, encoder), strict=True)]
        print(f"[train-answers] fold {f}: {len(held)} questions, threshold {threshold}", flush=True)
    return {"folds": folds, "thresholds": thresholds, "outcomes": outcomes, "curve": curve}


def risk_coverage(curve: Sequence[tuple[float, bool, bool]]) -> list[dict]:
    """Per threshold of the grid: share of questions answered (coverage) and share of those answers wrong (risk)."""
    points = []
    for t in (0.0, *GRID):
        answered = [(c, a) for p, c, a in curve if p >= t]
        wrong = sum(1 for c, _ in answered if not c)
        refused_unanswerable = sum(1 for p, _, a in curve if p < t and not a)
        points.append({"threshold": t, "coverage": round(len(answered) / max(len(curve), 1), 4),
                       "risk": round(wrong / max(len(answered), 1), 4),
                       "answerable_answered": round(sum(1 for c, a in answered if a) / max(sum(1 for *_, a in curve if a), 1), 4),
                       "unanswerable_refused": round(refused_unanswerable / max(sum(1 for *_, a in curve if not a), 1), 4)})
    return points


def plot_risk_coverage(points: Sequence[dict], thresholds: Sequence[float], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 4.5))
    axis.plot([p["coverage"] for p in points], [p["risk"] for p in points], marker=".", label="out of fold")
    for t in sorted(set(thresholds)):
        near = min(points, key=lambda p: abs(p["threshold"] - t))
        axis.annotate(f"t={t}", (near["coverage"], near["risk"]), fontsize=7)
    axis.set_xlabel("coverage (share of questions answered)")
    axis.set_ylabel("risk (share of answers that are wrong)")
    axis.set_title("Answer ranker, docqa + docqa2, cross-validated by document")
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def issue_goals(overall: dict) -> dict:
    """The goals of issue #36, over out-of-fold outcomes."""
    return {"answer_correct>=0.75": (overall["answer_correct"] or 0) >= 0.75,
            "precision_when_answered>=0.90": (overall.get("precision") or 0) >= 0.90,
            "unanswerable_refused>=0.80": (overall["abstention_unanswerable"] or 0) >= 0.80,
            "answerable_answered>=0.80": (overall["answered_rate"] or 0) >= 0.80}


def precision(rows: Sequence) -> float | None:
    answered = [o for o in rows if o.answered]
    return round(sum(1 for o in answered if o.correct) / len(answered), 4) if answered else None


HEADLINE = ("docqa", "docqa2")
"""The sources the headline figures are over: questions asked of a whole library with no document filter."""


def report(outcomes: dict, name: str) -> dict:
    """Overall, per format, kind and tag over the headline sources; per set over every source."""
    from bench.docqa_score import outcome_rows, summarise

    headline = [(s, o) for s, o, _ in outcomes.values() if s.source in HEADLINE]
    rows = [o for _, o in headline]
    by_format: dict[str, list] = {}
    for s, o in headline:
        by_format.setdefault(s.item.file.rsplit(".", 1)[-1].lower(), []).append(o)
    result = breakdown(rows)
    result["overall"]["precision"] = precision(rows)
    result["goals"] = issue_goals(result["overall"])
    result["per_format"] = {k: summarise(v) | {"precision": precision(v)} for k, v in sorted(by_format.items())}
    result["per_set"] = {src: summarise(v) | {"precision": precision(v)} for src in
                         sorted({s.source for s, _, _ in outcomes.values()})
                         for v in [[o for s, o, _ in outcomes.values() if s.source == src]]}
    result["items"] = outcome_rows(rows)
    result["name"] = name
    return result


def markdown_report(oof: dict, insample: dict, manifest: dict) -> str:
    def row(name: str, o: dict, i: dict | None = None) -> str:
        fmt = lambda v: "" if v is None else f"{v:.3f}"  # noqa: E731
        line = (f"| {name} | {o['items']} | {fmt(o['answer_correct'])} | {fmt(o.get('precision'))} | "
                f"{fmt(o['answered_rate'])} | {fmt(o['abstention_unanswerable'])} | {fmt(o['citation_hit'])} |")
        return line + (f" {fmt(i['answer_correct'])} |" if i else " |")

    lines = [f"# Answer ranker {manifest['version']}: out of fold by document (docqa + docqa2)", "",
             f"{len(manifest['fold_thresholds'])} folds of whole documents; each fold's model and threshold fitted on the "
             "other documents' questions (+ SQuAD); shipped threshold "
             f"{manifest['threshold']}. In-sample (shipped model on its own training questions) shown for comparison "
             "only.", "",
             "| slice | n | correct | precision (answered) | answerable answered | unanswerable refused | citation hit | "
             "in-sample correct |", "| --- | --- | --- | --- | --- | --- | --- | --- |",
             row("**all**", oof["overall"], insample["overall"])]
    lines += [row(f"set={k}", v, insample["per_set"].get(k)) for k, v in oof["per_set"].items()]
    lines += [row(f"format={k}", v, insample["per_format"].get(k)) for k, v in oof["per_format"].items()]
    lines += [row(f"kind={k}", v, insample["per_kind"].get(k)) for k, v in oof["per_kind"].items()]
    lines += [row(f"tag={k}", v, insample["per_tag"].get(k)) for k, v in oof["per_tag"].items()]
    lines += ["", "Goals (issue #36, out of fold): " + ", ".join(
        f"{k} {'met' if v else 'NOT met'}" for k, v in oof["goals"].items()), ""]
    return "\n".join(lines) + "\n"

