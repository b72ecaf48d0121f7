"""The follow-up examples (``data/followups_*.jsonl``) and how one is judged."""

from __future__ import annotations

import json
import pathlib
import re
from dataclasses import dataclass

from services.orchestrator.followups import FollowUpResolver, PastTurn

DATA = pathlib.Path(__file__).with_name("data")


@dataclass(frozen=True)
class Case:
    history: tuple[PastTurn, ...]
    question: str
    contains: tuple[str, ...]
    absent: tuple[str, ...]
    unchanged: bool

    def judge(self, resolved: str) -> bool:
        """Every expected phrase is in the resolved question and no pronoun it replaces is left."""
        if self.unchanged:
            return resolved == self.question
        low = " ".join(resolved.lower().split())
        if not all(c in low for c in self.contains):
            return False
        return not any(re.search(rf"(?<!\w){re.escape(a.strip().lower())}(?!\w)", low) for a in self.absent)


def load(name: str) -> list[Case]:
    cases = []
    for line in (DATA / name).read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        history = tuple(PastTurn(t["question"], t.get("answer", ""), t.get("short_answer", "")) for t in row["history"])
        cases.append(Case(history, row["question"], tuple(row.get("contains", ())), tuple(row.get("absent", ())),
                          bool(row.get("unchanged"))))
    return cases


def score(name: str, resolver: FollowUpResolver | None = None) -> tuple[int, int, list[str]]:
    resolver = resolver or FollowUpResolver()
    cases = load(name)
    failures = []
    for case in cases:
        resolved = resolver.resolve(case.question, case.history).resolved
        if not case.judge(resolved):
            failures.append(f"{case.question!r} -> {resolved!r}")
    return len(cases) - len(failures), len(cases), failures
