"""Scoring of the docqa set (../shared/data/docqa): the README's matching rule, and the summaries.

An answer is correct when its text, or the excerpt of a span it cites, contains a gold string
after normalising both sides (lower case, the dashes U+2010-2015 and U+2212 as "-", every run
of whitespace as one space), and the match starts and ends on word and number boundaries: no
letter, digit or "_" right before or after it; a number not inside a longer number (not right
after "digit." or right before ".digit") and not running into a thousands group (",ddd").
An unanswerable item (no gold strings) is correct only when the engine abstains.

A citation hit: one of the answer's citations is in the gold file (and on the gold page or
sheet when the item names one). Rates over answerable items count an abstention as a miss.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

_DASHES = re.compile("[\u2010-\u2015\u2212]")
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    return _SPACE.sub(" ", _DASHES.sub("-", text.lower())).strip()


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _bounded(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    if (before and _is_word(before)) or (after and _is_word(after)):
        return False
    match = text[start:end]
    if match[:1].isdigit() and start >= 2 and before in ".," and text[start - 2].isdigit():
        return False  # "3" inside "7.3", "073" inside "1,073"
    if match[-1:].isdigit() and after in ".," and end + 1 < len(text) and text[end + 1].isdigit():
        return False  # "13" inside "13.0", "73" inside "73,000"
    return True


def contains(text: str, gold: str) -> bool:
    """Does ``text`` contain ``gold`` under the docqa matching rule?"""
    haystack, needle = normalise(text), normalise(gold)
    if not needle:
        return False
    start = haystack.find(needle)
    while start >= 0:
        if _bounded(haystack, start, start + len(needle)):
            return True
        start = haystack.find(needle, start + 1)
    return False


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


@dataclass(frozen=True)
class Cited:
    filename: str
    page: int
    sheet_name: str
    excerpt: str
    row: str = ""
    column: str = ""


@dataclass(frozen=True)
class Reply:
    """What the engine said, in transport-neutral form."""

    answer: str
    support_status: str
    citations: tuple[Cited, ...]
    seconds: float


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


def abstained(reply: Reply) -> bool:
    return not reply.citations or reply.support_status.endswith("INSUFFICIENT")


def score(item: Item, reply: Reply) -> Outcome:
    answered = not abstained(reply)
    if item.answerable:
        texts = [reply.answer, *(c.excerpt for c in reply.citations)]
        correct = answered and any(contains(t, g) for t in texts for g in item.answers)
        hit = answered and any(
            c.filename == item.file and (not item.page or c.page == item.page)
            and (not item.sheet or c.sheet_name == item.sheet) for c in reply.citations)
    else:
        correct, hit = not answered, False
    cited = [f"{c.filename}" + (f" p{c.page}" if c.page else "") + (f" [{c.sheet_name}]" if c.sheet_name else "")
             + (f" row={c.row!r} col={c.column!r}" if c.column else "") for c in reply.citations]
    return Outcome(item.id, item.kind, item.tags, item.question, item.answers, answered, correct, hit,
                   round(reply.seconds, 4), reply.support_status.replace("SUPPORT_STATUS_", ""),
                   " ".join(reply.answer.split())[:300], cited)


def _rate(values: Sequence[bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 4)


def summarise(outcomes: Sequence[Outcome]) -> dict:
    answerable = [o for o in outcomes if o.gold]
    unanswerable = [o for o in outcomes if not o.gold]
    seconds = [o.seconds for o in outcomes]
    return {
        "items": len(outcomes),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "answer_correct": _rate([o.correct for o in answerable]),
        "citation_hit": _rate([o.citation_hit for o in answerable]),
        "answered_rate": _rate([o.answered for o in answerable]),
        "correct_when_answered": _rate([o.correct for o in answerable if o.answered]),
        "abstention_unanswerable": _rate([not o.answered for o in unanswerable]),
        "latency_p50_s": _percentile(seconds, 0.5),
        "latency_p95_s": _percentile(seconds, 0.95),
        "latency_mean_s": round(statistics.fmean(seconds), 4) if seconds else None,
    }


def breakdown(outcomes: Sequence[Outcome]) -> dict:
    kinds = sorted({o.kind for o in outcomes})
    tags = sorted({t for o in outcomes for t in o.tags})
    return {
        "overall": summarise(outcomes),
        "per_kind": {k: summarise([o for o in outcomes if o.kind == k]) for k in kinds},
        "per_tag": {t: summarise([o for o in outcomes if t in o.tags]) for t in tags},
    }


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
