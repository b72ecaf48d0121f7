"""Calibrates the extractive engine's abstention threshold on SQuAD 2.0 (dev articles + distractors).

Every dev question is answered with abstention off, keeping the best sentence score; then the
threshold sweep shows, for each candidate, the share of answerable questions still answered and
the share of unanswerable ones refused. The chosen threshold is the highest one that still
answers at least ``--min-answer-rate`` (0.8, the goal) of answerable questions, i.e. the one
that refuses the most unanswerable questions within that budget. A two-fold check (calibrate
on half of the articles, measure on the other half) shows how well it transfers.

Usage: python -m bench.calibrate_abstention [--min-answer-rate 0.8]
The result goes into ``services.rag.answers.extractive.ABSTAIN_THRESHOLD`` with the numbers.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from bench.corpus import CACHE_DIR, DiskCachedEncoder
from bench.squad import Outcome, build, evaluate_questions


def rates(outcomes: Sequence[Outcome], threshold: float) -> tuple[float, float]:
    answerable = [o.best_score >= threshold for o in outcomes if o.question.answerable]
    refused = [o.best_score < threshold for o in outcomes if not o.question.answerable]
    return sum(answerable) / max(len(answerable), 1), sum(refused) / max(len(refused), 1)


def choose(outcomes: Sequence[Outcome], min_answer_rate: float) -> float:
    candidates = sorted({round(o.best_score, 4) for o in outcomes})
    best = 0.0
    for threshold in candidates:
        if rates(outcomes, threshold)[0] >= min_answer_rate:
            best = threshold
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-answer-rate", type=float, default=0.8)
    args = parser.parse_args()
    encoder = DiskCachedEncoder("squad")
    corpus, questions = build(encoder)
    try:
        outcomes = evaluate_questions(corpus, questions, encoder, abstain_threshold=0.0)
    finally:
        encoder.save()
        corpus.close()
    dump = CACHE_DIR / "squad-calibration.jsonl"
    with dump.open("w") as fh:  # per-question features, for analysis beyond the one threshold
        for o in outcomes:
            fh.write(json.dumps({"id": o.question.id, "question": o.question.text, "article": o.question.article,
                                 "answerable": o.question.answerable, "golds": [t for t, _ in o.question.answers],
                                 "score": o.best_score, "sentence": o.best_sentence, "context": o.best_context,
                                 "evidence_at_5": o.evidence_at_5, "short_answer": o.short_answer,
                                 "citations": o.citations}) + "\n")
    print("threshold  answered(answerable)  refused(unanswerable)")
    for threshold in [x / 100 for x in range(20, 80, 2)]:
        answered, refused = rates(outcomes, threshold)
        print(f"{threshold:9.2f}  {answered:20.3f}  {refused:21.3f}")
    chosen = choose(outcomes, args.min_answer_rate)
    answered, refused = rates(outcomes, chosen)
    articles = sorted({o.question.article for o in outcomes})
    folds = []
    for half in (set(articles[::2]), set(articles[1::2])):
        fit = choose([o for o in outcomes if o.question.article in half], args.min_answer_rate)
        held_out = [o for o in outcomes if o.question.article not in half]
        folds.append({"threshold": fit, "held_out": dict(zip(("answered", "refused"), rates(held_out, fit)))})
    print(json.dumps({"chosen_threshold": chosen, "answered_answerable": round(answered, 4),
                      "refused_unanswerable": round(refused, 4), "two_fold": folds}, indent=1))


if __name__ == "__main__":
    main()
