"""Scoring of the docqa sets (../shared/data/docqa, docqa2): items, outcomes, goals and the report.

The matching rule (when an answer is correct, when a citation hits) and the totals are the product's
(``services.orchestrator.evals.matching`` and ``.totals``, whose docstrings state the rule), so a user's
evaluation set and the benches are judged alike; they are re-exported here under their old names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

# The matching rule and the totals live in the product (evaluation sets use them); re-exported for the benches.
from services.orchestrator.evals.matching import Cited, Expected, Reply, abstained, contains, judge, normalise
from services.orchestrator.evals.totals import breakdown, summarise

__all__ = ["Cited", "Item", "Outcome", "Reply", "abstained", "breakdown", "contains", "goals", "markdown", "normalise",
           "outcome_rows", "score", "summarise"]


@dataclass(frozen=True)
class Item:
    id: str
    file: str
    question: str
    answers: tuple[str, ...]
    kind: str
    tags: tuple[str, ...]
    page: int = 0
    sheet: str = ""

    @property
    def answerable(self) -> bool:
        return bool(self.answers)

    @classmethod
    def from_json(cls, raw: dict) -> Item:
        """docqa names a sheet in ``sheet``; docqa2 puts a sheet's name in ``page`` (a page or slide number else)."""
        page, sheet = raw.get("page"), str(raw.get("sheet") or "")
        if isinstance(page, str) and not page.strip().isdigit():
            page, sheet = 0, sheet or page
        return cls(raw["id"], raw["file"], raw["question"], tuple(raw["answers"]), raw["kind"], tuple(raw.get("tags", ())),
                   int(page or 0), sheet)


@dataclass
class Outcome:
    id: str
    kind: str
    tags: tuple[str, ...]
    question: str
    gold: tuple[str, ...]
    answered: bool
    correct: bool
    citation_hit: bool
    seconds: float
    support_status: str
    answer: str
    cited: list[str] = field(default_factory=list)

    @property
    def answerable(self) -> bool:
        return bool(self.gold)


def score(item: Item, reply: Reply) -> Outcome:
    verdict = judge(Expected(item.answers, item.file, item.page, item.sheet), reply)
    cited = [f"{c.filename}" + (f" p{c.page}" if c.page else "") + (f" [{c.sheet_name}]" if c.sheet_name else "")
             + (f" row={c.row!r} col={c.column!r}" if c.column else "") for c in reply.citations]
    return Outcome(item.id, item.kind, item.tags, item.question, item.answers, verdict.answered, verdict.correct,
                   verdict.citation_hit, round(reply.seconds, 4), reply.support_status.replace("SUPPORT_STATUS_", ""),
                   " ".join(reply.answer.split())[:300], cited)


def goals(overall: dict) -> dict:
    return {
        "answer_correct>=0.75": (overall["answer_correct"] or 0) >= 0.75,
        "citation_hit>=0.75": (overall["citation_hit"] or 0) >= 0.75,
        "abstention_unanswerable>=0.8": (overall["abstention_unanswerable"] or 0) >= 0.8,
        "answered_rate>=0.85": (overall["answered_rate"] or 0) >= 0.85,
        "latency_p50_s<=1": (overall["latency_p50_s"] or 99) <= 1.0,
    }


def outcome_rows(outcomes: Sequence[Outcome]) -> list[dict]:
    return [asdict(o) for o in outcomes]


def markdown(results: dict) -> str:
    lines = [f"# docqa bench ({results['date']}, {results['mode']})", "",
             results.get("description", ""), ""]
    header = "| slice | n | correct | citation hit | answered | abstained (unans.) | p50 s | p95 s |"
    lines += [header, "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    def row(name: str, s: dict) -> str:
        fmt = lambda v: "" if v is None else f"{v:.3f}"  # noqa: E731
        return (f"| {name} | {s['items']} | {fmt(s['answer_correct'])} | {fmt(s['citation_hit'])} | "
                f"{fmt(s['answered_rate'])} | {fmt(s['abstention_unanswerable'])} | {fmt(s['latency_p50_s'])} | "
                f"{fmt(s['latency_p95_s'])} |")
    lines.append(row("**all**", results["overall"]))
    lines += [row(f"kind={k}", s) for k, s in results["per_kind"].items()]
    lines += [row(f"tag={t}", s) for t, s in results["per_tag"].items()]
    lines += ["", "Goals: " + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in results["goals"].items()), "",
              "| id | kind | ok | cite | status | s | question | gold | answer |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for o in results["items"]:
        cell = lambda t: str(t).replace("|", "\\|").replace("\n", " ")  # noqa: E731
        lines.append(f"| {o['id']} | {o['kind']} | {'Y' if o['correct'] else '-'} | {'Y' if o['citation_hit'] else '-'} | "
                     f"{o['support_status']} | {o['seconds']:.2f} | {cell(o['question'])} | {cell('; '.join(o['gold']))} | "
                     f"{cell(o['answer'][:160])} |")
    return "\n".join(lines) + "\n"
